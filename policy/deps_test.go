package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const followAll = `apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  propagateDeps: true
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}, {apiVersion: batch/v1, kind: CronJob}, {apiVersion: v1, kind: Pod}, {apiVersion: apps/v1, kind: StatefulSet}]
  placement:
    clusterAffinity: {clusterNames: [a, b]}
`

func dep(kind, name string) string {
	return "---\napiVersion: v1\nkind: " + kind + "\nmetadata: {name: " + name + ", namespace: shop}\n"
}

func TestPodDependenciesEveryField(t *testing.T) {
	// Each field of SEMANTICS §4, in containers, initContainers and
	// ephemeralContainers, names its own dependency.
	workload := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    metadata: {labels: {app: web}}
    spec:
      serviceAccountName: web-sa
      imagePullSecrets: [{name: s-pull}]
      containers:
        - name: c
          envFrom: [{secretRef: {name: s-envfrom}}, {configMapRef: {name: cm-envfrom}}]
          env:
            - {name: A, valueFrom: {secretKeyRef: {name: s-env, key: k}}}
            - {name: B, valueFrom: {configMapKeyRef: {name: cm-env, key: k}}}
      initContainers:
        - name: i
          envFrom: [{secretRef: {name: s-init}}]
          env: [{name: C, valueFrom: {configMapKeyRef: {name: cm-init, key: k}}}]
      ephemeralContainers:
        - name: e
          envFrom: [{configMapRef: {name: cm-eph}}]
          env: [{name: D, valueFrom: {secretKeyRef: {name: s-eph, key: k}}}]
      volumes:
        - {name: v1, secret: {secretName: s-vol}}
        - {name: v2, configMap: {name: cm-vol}}
        - name: v3
          projected: {sources: [{secret: {name: s-proj}}, {configMap: {name: cm-proj}}]}
        - {name: v4, csi: {driver: x, nodePublishSecretRef: {name: s-csi}}}
        - {name: v5, persistentVolumeClaim: {claimName: data}}
        - {name: v6, azureFile: {secretName: s-azure, shareName: x}}
        - {name: v7, cephfs: {monitors: [m], secretRef: {name: s-ceph}}}
        - {name: v8, cinder: {volumeID: x, secretRef: {name: s-cinder}}}
        - {name: v9, flexVolume: {driver: x, secretRef: {name: s-flex}}}
        - {name: v10, rbd: {monitors: [m], image: i, secretRef: {name: s-rbd}}}
        - {name: v11, scaleIO: {gateway: g, system: s, secretRef: {name: s-scaleio}}}
        - {name: v12, iscsi: {targetPortal: p, iqn: q, lun: 0, secretRef: {name: s-iscsi}}}
        - {name: v13, storageos: {volumeName: v, secretRef: {name: s-storageos}}}
`
	names := map[string][]string{
		"Secret":                {"s-pull", "s-envfrom", "s-env", "s-init", "s-eph", "s-vol", "s-proj", "s-csi", "s-azure", "s-ceph", "s-cinder", "s-flex", "s-rbd", "s-scaleio", "s-iscsi", "s-storageos"},
		"ConfigMap":             {"cm-envfrom", "cm-env", "cm-init", "cm-eph", "cm-vol", "cm-proj"},
		"ServiceAccount":        {"web-sa"},
		"PersistentVolumeClaim": {"data"},
	}
	stream := workload
	for kind, ns := range names {
		for _, n := range ns {
			stream += dep(kind, n)
		}
	}
	stream += dep("Secret", "unrelated") + dep("ConfigMap", "unrelated")
	e := engine(t, followAll)
	p, err := e.Place(objects(t, stream), clusterNames("a", "b", "c"))
	require.NoError(t, err)
	web := ObjectKey{"apps/v1", "Deployment", "shop", "web"}
	for kind, ns := range names {
		for _, n := range ns {
			op := p.Get(ObjectKey{"v1", kind, "shop", n})
			require.NotNil(t, op, n)
			assert.Equal(t, map[string]int64{"a": 0, "b": 0}, targetsOf(op), "%s %s follows the workload", kind, n)
			assert.Equal(t, []ObjectKey{web}, op.Follows)
		}
	}
	assert.Empty(t, p.Get(ObjectKey{"v1", "Secret", "shop", "unrelated"}).Targets)
	assert.Empty(t, p.Get(ObjectKey{"v1", "ConfigMap", "shop", "unrelated"}).Targets)
	assert.Empty(t, p.Warnings)
}

func TestFollow(t *testing.T) {
	tests := []struct {
		name   string
		policy string
		stream string
		want   map[string]map[string]int64 // "Kind/name" -> targets
		warn   []string
	}{
		{"default service account does not follow",
			followAll, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop}\nspec: {serviceAccountName: default, containers: [{name: c}]}\n" + dep("ServiceAccount", "default"),
			map[string]map[string]int64{"ServiceAccount/default": {}}, nil},
		{"statefulset volumeClaimTemplates do not follow",
			followAll, "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: shop}\nspec:\n  replicas: 1\n  volumeClaimTemplates: [{metadata: {name: data}}]\n  template: {spec: {containers: [{name: c, volumeMounts: [{name: data, mountPath: /d}]}]}}\n" + dep("PersistentVolumeClaim", "data"),
			map[string]map[string]int64{"PersistentVolumeClaim/data": {}, "StatefulSet/db": {"a": 1, "b": 1}}, nil},
		{"statefulset: a pod volume naming a claim template is not a dependency, another claim is",
			followAll, "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: shop}\nspec:\n  replicas: 1\n  volumeClaimTemplates: [{metadata: {name: data}}]\n  template: {spec: {containers: [{name: c}], volumes: [{name: data, persistentVolumeClaim: {claimName: data}}, {name: shared, persistentVolumeClaim: {claimName: shared}}]}}\n" + dep("PersistentVolumeClaim", "data") + dep("PersistentVolumeClaim", "shared"),
			map[string]map[string]int64{"PersistentVolumeClaim/data": {}, "PersistentVolumeClaim/shared": {"a": 0, "b": 0}, "StatefulSet/db": {"a": 1, "b": 1}}, nil},
		{"cronjob template",
			followAll, "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly, namespace: shop}\nspec: {jobTemplate: {spec: {template: {spec: {containers: [{name: c, envFrom: [{configMapRef: {name: cfg}}]}]}}}}}\n" + dep("ConfigMap", "cfg"),
			map[string]map[string]int64{"ConfigMap/cfg": {"a": 0, "b": 0}}, nil},
		{"without propagateDeps nothing follows",
			strings.Replace(followAll, "propagateDeps: true", "propagateDeps: false", 1), "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec: {replicas: 2, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: c}]}}}\n" + "---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {selector: {app: web}}\n",
			map[string]map[string]int64{"Service/web": {}}, nil},
		{"dependencies live in the workload's namespace",
			followAll, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop}\nspec: {containers: [{name: c, envFrom: [{configMapRef: {name: cfg}}]}]}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: other}\n",
			map[string]map[string]int64{"ConfigMap/cfg": {}}, []string{"DependencyMissing: Pod shop/p depends on ConfigMap shop/cfg through containers.envFrom.configMapRef, which is not among the objects"}},
		{"service by selector, ingress by backend, TLS secret by ingress (helmfleet)",
			followAll, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec: {replicas: 2, template: {metadata: {labels: {app: web, tier: fe}}, spec: {containers: [{name: c}]}}}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {selector: {app: web}}
---
apiVersion: v1
kind: Service
metadata: {name: other, namespace: shop}
spec: {selector: {app: web, tier: be}}
---
apiVersion: v1
kind: Service
metadata: {name: headless, namespace: shop}
spec: {}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: shop}
spec:
  tls: [{secretName: web-tls}]
  rules: [{http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: unrelated, namespace: shop}
spec: {defaultBackend: {service: {name: other}}}
` + dep("Secret", "web-tls"),
			map[string]map[string]int64{"Service/web": {"a": 0, "b": 0}, "Service/other": {}, "Service/headless": {}, "Ingress/web": {"a": 0, "b": 0}, "Ingress/unrelated": {}, "Secret/web-tls": {"a": 0, "b": 0}}, nil},
		{"a dependency with its own policy gets the union",
			followAll + "---\napiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: cfg, namespace: shop}\nspec:\n  resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]\n  placement: {clusterAffinity: {clusterNames: [c]}}\n",
			"apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop}\nspec: {containers: [{name: c, envFrom: [{configMapRef: {name: cfg}}]}]}\n" + dep("ConfigMap", "cfg"),
			map[string]map[string]int64{"ConfigMap/cfg": {"a": 0, "b": 0, "c": 0}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := engine(t, tt.policy)
			p, err := e.Place(objects(t, tt.stream), clusterNames("a", "b", "c"))
			require.NoError(t, err)
			for ref, want := range tt.want {
				kind, name, _ := strings.Cut(ref, "/")
				var op *ObjectPlacement
				for _, o := range p.Objects {
					if o.Object.Kind == kind && o.Object.Name == name {
						op = o
					}
				}
				require.NotNil(t, op, ref)
				assert.Equal(t, want, targetsOf(op), ref)
			}
			var warns []string
			for _, w := range p.Warnings {
				if w.Code == WarnDependencyMissing {
					warns = append(warns, w.String())
				}
			}
			assert.Equal(t, tt.warn, warns)
		})
	}
}
