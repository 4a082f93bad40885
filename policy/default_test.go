package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// controller is a workload as community charts render it: an ingress
// controller named by flags, with its ServiceAccount, RBAC, webhook,
// IngressClass, disruption budget and autoscaler.
const controller = `apiVersion: apps/v1
kind: Deployment
metadata: {name: ctl, namespace: shop}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: ctl}}
    spec:
      serviceAccountName: ctl
      containers:
        - name: c
          args: [--configmap=$(POD_NAMESPACE)/ctl-config, --tcp-services=other/ctl-tcp, --controller-class=example.com/ctl, --election-id=ctl-leader]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: ctl, namespace: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ctl-config, namespace: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ctl-tcp, namespace: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ctl-leader, namespace: shop}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ctl}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ctl}
subjects: [{kind: ServiceAccount, name: ctl, namespace: shop}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ctl}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ctl, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: ctl}
subjects: [{kind: ServiceAccount, name: ctl}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: ctl, namespace: shop}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: someone-else}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: unrelated}
subjects: [{kind: ServiceAccount, name: other, namespace: shop}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: unrelated}
---
apiVersion: v1
kind: Service
metadata: {name: ctl-admission, namespace: shop}
spec: {selector: {app: ctl}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: ctl}
webhooks: [{name: v.example.com, clientConfig: {service: {name: ctl-admission, namespace: shop}}}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.metrics.example.com}
spec: {service: {name: ctl-admission, namespace: shop}}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: ctl}
spec: {controller: example.com/ctl}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: another}
spec: {controller: example.com/another}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: ctl, namespace: shop}
spec: {selector: {matchLabels: {app: ctl}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: ctl, namespace: shop}
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: ctl}}
`

const controllerPolicy = `apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: ctl, namespace: shop}
spec:
  propagateDeps: true
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: ctl}]
  placement:
    clusterAffinity: {clusterNames: [a, b]}
`

// Each link helmfleet adds for community charts brings its object to the
// workload's clusters, and says through which field.
func TestFollowCommunityChartLinks(t *testing.T) {
	e := engine(t, controllerPolicy)
	p, err := e.Place(objects(t, controller), clusterNames("a", "b", "c"))
	require.NoError(t, err)
	ctl := ObjectKey{"apps/v1", "Deployment", "shop", "ctl"}
	sa := ObjectKey{"v1", "ServiceAccount", "shop", "ctl"}
	crb := ObjectKey{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "ctl"}
	rb := ObjectKey{"rbac.authorization.k8s.io/v1", "RoleBinding", "shop", "ctl"}
	svc := ObjectKey{"v1", "Service", "shop", "ctl-admission"}
	tests := []struct {
		object ObjectKey
		via    []Follow // nil: it goes nowhere
	}{
		{sa, []Follow{{ctl, "serviceAccountName"}}},
		{ObjectKey{"v1", "ConfigMap", "shop", "ctl-config"}, []Follow{{ctl, "container flag naming it"}}},
		{ObjectKey{"v1", "ConfigMap", "shop", "ctl-leader"}, []Follow{{ctl, "container flag naming it"}}},
		{ObjectKey{"v1", "ConfigMap", "shop", "ctl-tcp"}, nil}, // named in another namespace
		{crb, []Follow{{sa, "ClusterRoleBinding subjects"}}},
		{ObjectKey{"rbac.authorization.k8s.io/v1", "ClusterRole", "", "ctl"}, []Follow{{crb, "roleRef"}}},
		{rb, []Follow{{sa, "RoleBinding subjects"}}},
		{ObjectKey{"rbac.authorization.k8s.io/v1", "Role", "shop", "ctl"}, []Follow{{rb, "roleRef"}}},
		{ObjectKey{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "someone-else"}, nil},
		{ObjectKey{"rbac.authorization.k8s.io/v1", "ClusterRole", "", "unrelated"}, nil},
		{svc, []Follow{{ctl, "Service spec.selector"}}},
		{ObjectKey{"admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "", "ctl"}, []Follow{{svc, "clientConfig.service"}}},
		{ObjectKey{"apiregistration.k8s.io/v1", "APIService", "", "v1.metrics.example.com"}, []Follow{{svc, "clientConfig.service"}}},
		{ObjectKey{"networking.k8s.io/v1", "IngressClass", "", "ctl"}, []Follow{{ctl, "IngressClass spec.controller run by the workload"}}},
		{ObjectKey{"networking.k8s.io/v1", "IngressClass", "", "another"}, nil},
		{ObjectKey{"policy/v1", "PodDisruptionBudget", "shop", "ctl"}, []Follow{{ctl, "PodDisruptionBudget spec.selector"}}},
		{ObjectKey{"autoscaling/v2", "HorizontalPodAutoscaler", "shop", "ctl"}, []Follow{{ctl, "HorizontalPodAutoscaler spec.scaleTargetRef"}}},
	}
	for _, tt := range tests {
		t.Run(tt.object.String(), func(t *testing.T) {
			op := p.Get(tt.object)
			require.NotNil(t, op)
			assert.Equal(t, tt.via, op.FollowsVia)
			if tt.via == nil {
				assert.Empty(t, op.Targets)
				return
			}
			assert.Equal(t, map[string]int64{"a": 0, "b": 0}, targetsOf(op))
			assert.Len(t, op.Follows, len(tt.via))
		})
	}
	x, err := e.Explain(p, ObjectKey{"rbac.authorization.k8s.io/v1", "ClusterRole", "", "ctl"}, "b")
	require.NoError(t, err)
	assert.Equal(t, []Follow{{crb, "roleRef"}}, x.Because)
	assert.Contains(t, x.String(), "placed here as it follows ClusterRoleBinding ctl via roleRef")
}

func TestFollowIngressClassByFlagAndByIngress(t *testing.T) {
	stream := `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: traefik, namespace: edge}
spec:
  template:
    metadata: {labels: {app: traefik}}
    spec: {containers: [{name: c, args: [--providers.kubernetesingress.ingressClass=traefik]}]}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: traefik}
spec: {controller: traefik.io/ingress-controller}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: site, namespace: edge}
spec: {ingressClassName: public}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: public}
spec: {controller: example.com/lb}
`
	e := engine(t, `apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: edge}
spec:
  propagateDeps: true
  resourceSelectors: [{apiVersion: apps/v1, kind: DaemonSet}, {apiVersion: networking.k8s.io/v1, kind: Ingress}]
  placement: {clusterAffinity: {clusterNames: [a]}}
`)
	p, err := e.Place(objects(t, stream), clusterNames("a", "b"))
	require.NoError(t, err)
	assert.Equal(t, []Follow{{ObjectKey{"apps/v1", "DaemonSet", "edge", "traefik"}, "IngressClass spec.controller run by the workload"}},
		p.Get(ObjectKey{"networking.k8s.io/v1", "IngressClass", "", "traefik"}).FollowsVia)
	assert.Equal(t, []Follow{{ObjectKey{"networking.k8s.io/v1", "Ingress", "edge", "site"}, "spec.ingressClassName"}},
		p.Get(ObjectKey{"networking.k8s.io/v1", "IngressClass", "", "public"}).FollowsVia)
}

func TestFollowCustomResourcesOfACRD(t *testing.T) {
	stream := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec: {group: example.com, names: {kind: Widget, plural: widgets}, scope: Namespaced, versions: [{name: v1, served: true, storage: true}]}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: shop}
---
apiVersion: other.example.com/v1
kind: Widget
metadata: {name: w, namespace: shop}
`
	e := engine(t, `apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: crds}
spec:
  propagateDeps: true
  resourceSelectors: [{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition}]
  placement: {clusterAffinity: {clusterNames: [b]}}
`)
	p, err := e.Place(objects(t, stream), clusterNames("a", "b"))
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"b": 0}, targetsOf(p.Get(ObjectKey{"example.com/v1", "Widget", "shop", "w"})))
	assert.Empty(t, p.Get(ObjectKey{"other.example.com/v1", "Widget", "shop", "w"}).Targets, "a kind of another group does not follow")
}

// PlaceDefault places what no policy names where it is told, workloads
// first and leaders before followers, and names what stays unplaced.
func TestPlaceDefault(t *testing.T) {
	// Without propagateDeps nothing follows the Deployment: everything
	// but it is left to the default.
	e := engine(t, strings.Replace(controllerPolicy, "propagateDeps: true", "propagateDeps: false", 1))
	stream := controller + `---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop}
spec: {template: {spec: {serviceAccountName: migrate, containers: [{name: c}]}}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: migrate, namespace: shop}
`
	p, err := e.Place(objects(t, stream), clusterNames("a", "b", "c"))
	require.NoError(t, err)
	require.NoError(t, e.PlaceDefault(p, []string{"b", "a"}, "the workloads go there"))
	clusters, reason := p.DefaultClusters()
	assert.Equal(t, []string{"b", "a"}, clusters)
	assert.Equal(t, "the workloads go there", reason)
	for _, op := range p.Objects {
		assert.Equal(t, []string{"a", "b"}, clusterNamesOf(op), "%s goes to the default clusters", op.Object)
	}
	job := p.Get(ObjectKey{"batch/v1", "Job", "shop", "migrate"})
	assert.True(t, job.Default, "a workload no policy names is placed by default")
	assert.Equal(t, map[string]int64{"a": 1, "b": 1}, targetsOf(job), "with all its replicas (parallelism) on each")
	migrate := p.Get(ObjectKey{"v1", "ServiceAccount", "shop", "migrate"})
	assert.False(t, migrate.Default, "the Job's ServiceAccount follows the Job")
	assert.Equal(t, []Follow{{job.Object, "serviceAccountName"}}, migrate.FollowsVia)
	sa := p.Get(ObjectKey{"v1", "ServiceAccount", "shop", "ctl"})
	assert.True(t, sa.Default)
	crb := p.Get(ObjectKey{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "ctl"})
	assert.False(t, crb.Default, "a binding follows its default-placed ServiceAccount")
	assert.Equal(t, []Follow{{sa.Object, "ClusterRoleBinding subjects"}}, crb.FollowsVia)
	role := p.Get(ObjectKey{"rbac.authorization.k8s.io/v1", "ClusterRole", "", "ctl"})
	assert.Equal(t, []Follow{{crb.Object, "roleRef"}}, role.FollowsVia)
	other := p.Get(ObjectKey{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "someone-else"})
	assert.True(t, other.Default, "a binding of a ServiceAccount that is not there is placed by default")
	assert.Equal(t, []Follow{{other.Object, "roleRef"}}, p.Get(ObjectKey{"rbac.authorization.k8s.io/v1", "ClusterRole", "", "unrelated"}).FollowsVia)
	for _, w := range p.Warnings {
		assert.NotEqual(t, WarnNotPlaced, w.Code, w.String())
	}
	x, err := e.Explain(p, sa.Object, "a")
	require.NoError(t, err)
	assert.True(t, x.Default)
	assert.Contains(t, x.String(), "placed here by default: the workloads go there")
	x, err = e.Explain(p, sa.Object, "c")
	require.NoError(t, err)
	assert.False(t, x.Placed)
	assert.False(t, x.Default)

	// The same placement again is the same, object for object.
	p2, err := e.Place(objects(t, stream), clusterNames("a", "b", "c"))
	require.NoError(t, err)
	require.NoError(t, e.PlaceDefault(p2, []string{"a", "b"}, "the workloads go there"))
	assert.Equal(t, p.Table(), p2.Table())
}

func TestPlaceDefaultWarnsAboutWhatStaysUnplaced(t *testing.T) {
	e := engine(t, `apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: none, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: missing}]
`)
	stream := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: shop}\n"
	p, err := e.Place(objects(t, stream), clusterNames("a"))
	require.NoError(t, err)
	require.NoError(t, e.PlaceDefault(p, nil, "no workload is placed"))
	var got []string
	for _, w := range p.Warnings {
		if w.Code == WarnNotPlaced {
			got = append(got, w.String())
		}
	}
	assert.Equal(t, []string{"NotPlaced: ConfigMap shop/cfg goes to no cluster: no propagation policy selects it, it follows no placed object, and there is no default placement (no workload is placed)"}, got)
	assert.Contains(t, p.Table(), "ConfigMap shop/cfg  -  none")

	err = e.PlaceDefault(p, []string{"z"}, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `cluster "z" is not in the placement`)
}

func clusterNamesOf(op *ObjectPlacement) []string {
	out := make([]string, len(op.Targets))
	for i, t := range op.Targets {
		out[i] = t.Cluster
	}
	return out
}
