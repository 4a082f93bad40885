package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const podinfoDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: shop
  labels: {app.kubernetes.io/name: podinfo, keep: "yes"}
  annotations: {team: web}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: podinfo}}
    spec:
      initContainers:
        - {name: init, image: busybox:1.36}
      containers:
        - name: podinfod
          image: ghcr.io/stefanprodan/podinfo:6.5.0
          command: [./podinfo]
          args: [--port=9898, --level=debug]
        - name: sidecar
          image: envoyproxy/envoy:v1.29
`

func ov(name, ns, rules string) string {
	kind := "OverridePolicy"
	meta := fmt.Sprintf("{name: %s, namespace: %s}", name, ns)
	if ns == "" {
		kind = "ClusterOverridePolicy"
		meta = fmt.Sprintf("{name: %s}", name)
	}
	return fmt.Sprintf("apiVersion: policy.karmada.io/v1alpha1\nkind: %s\nmetadata: %s\nspec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n  overrideRules:\n%s", kind, meta, indent(rules, "    "))
}

func TestOverriders(t *testing.T) {
	tests := []struct {
		name  string
		rules string
		check func(t *testing.T, o *unstructured.Unstructured)
	}{
		{"image registry replace on every container, not init containers", "- overriders: {imageOverrider: [{component: Registry, operator: replace, value: mirror.local}]}", func(t *testing.T, o *unstructured.Unstructured) {
			assert.Equal(t, "mirror.local/stefanprodan/podinfo:6.5.0", image(o, "containers", 0))
			assert.Equal(t, "mirror.local/envoyproxy/envoy:v1.29", image(o, "containers", 1))
			assert.Equal(t, "busybox:1.36", image(o, "initContainers", 0))
		}},
		{"image registry add appends, remove clears", "- overriders: {imageOverrider: [{component: Registry, operator: add, value: -cn}, {component: Registry, operator: remove}]}", func(t *testing.T, o *unstructured.Unstructured) {
			assert.Equal(t, "stefanprodan/podinfo:6.5.0", image(o, "containers", 0))
		}},
		{"image repository add", "- overriders: {imageOverrider: [{component: Repository, operator: add, value: -fips}]}", func(t *testing.T, o *unstructured.Unstructured) {
			assert.Equal(t, "ghcr.io/stefanprodan/podinfo-fips:6.5.0", image(o, "containers", 0))
		}},
		{"image tag replace by digest, predicate path", "- overriders: {imageOverrider: [{predicate: {path: /spec/template/spec/initContainers/0/image}, component: Tag, operator: replace, value: 'sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'}]}", func(t *testing.T, o *unstructured.Unstructured) {
			assert.Equal(t, "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", image(o, "initContainers", 0))
			assert.Equal(t, "ghcr.io/stefanprodan/podinfo:6.5.0", image(o, "containers", 0))
		}},
		{"command add appends, args remove drops exact values", "- overriders:\n    commandOverrider: [{containerName: podinfod, operator: add, value: [--x]}]\n    argsOverrider: [{containerName: podinfod, operator: remove, value: [--level=debug, --absent]}]", func(t *testing.T, o *unstructured.Unstructured) {
			assert.Equal(t, []any{"./podinfo", "--x"}, container(o, 0)["command"])
			assert.Equal(t, []any{"--port=9898"}, container(o, 0)["args"])
		}},
		{"command add on a container without one creates it", "- overriders: {commandOverrider: [{containerName: sidecar, operator: add, value: [envoy, -c]}]}", func(t *testing.T, o *unstructured.Unstructured) {
			assert.Equal(t, []any{"envoy", "-c"}, container(o, 1)["command"])
		}},
		{"labels: add sets, replace and remove touch only existing keys", "- overriders:\n    labelsOverrider:\n      - {operator: add, value: {cluster.io/region: east, keep: overwritten}}\n      - {operator: replace, value: {absent: x, app.kubernetes.io/name: pi}}\n      - {operator: remove, value: {nope: '', keep: ''}}", func(t *testing.T, o *unstructured.Unstructured) {
			assert.Equal(t, map[string]string{"app.kubernetes.io/name": "pi", "cluster.io/region": "east"}, o.GetLabels())
		}},
		{"annotations add creates the map when absent", "- overriders: {annotationsOverrider: [{operator: remove, value: {team: ''}}, {operator: add, value: {a/b: c}}]}", func(t *testing.T, o *unstructured.Unstructured) {
			assert.Equal(t, map[string]string{"a/b": "c"}, o.GetAnnotations())
		}},
		{"plaintext add, replace, remove", "- overriders:\n    plaintext:\n      - {path: /spec/replicas, operator: replace, value: 9}\n      - {path: /spec/paused, operator: add, value: true}\n      - {path: /metadata/annotations, operator: remove}", func(t *testing.T, o *unstructured.Unstructured) {
			assert.Equal(t, int64(9), o.Object["spec"].(map[string]any)["replicas"])
			assert.Equal(t, true, o.Object["spec"].(map[string]any)["paused"])
			assert.Nil(t, o.GetAnnotations())
		}},
		{"fixed order inside a rule: image, then plaintext", "- overriders:\n    plaintext: [{path: /spec/template/spec/containers/0/image, operator: replace, value: 'nginx:1'}]\n    imageOverrider: [{component: Tag, operator: replace, value: '7.0.0'}]", func(t *testing.T, o *unstructured.Unstructured) {
			assert.Equal(t, "nginx:1", image(o, "containers", 0), "plaintext runs after the image overrider")
		}},
		{"rules apply in list order", "- overriders: {labelsOverrider: [{operator: add, value: {k: first}}]}\n- overriders: {labelsOverrider: [{operator: add, value: {k: second}}]}", func(t *testing.T, o *unstructured.Unstructured) {
			assert.Equal(t, "second", o.GetLabels()["k"])
		}},
		{"targetCluster limits a rule", "- targetCluster: {clusterNames: [other]}\n  overriders: {labelsOverrider: [{operator: add, value: {k: other}}]}\n- targetCluster: {labelSelector: {matchLabels: {env: prod}}}\n  overriders: {labelsOverrider: [{operator: add, value: {k: prod}}]}", func(t *testing.T, o *unstructured.Unstructured) {
			assert.Equal(t, "prod", o.GetLabels()["k"])
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := engine(t, ov("o", "shop", tt.rules))
			in := object(t, podinfoDeployment)
			before := in.DeepCopy()
			out, applied, err := e.Override(in, Cluster{Name: "east", Labels: map[string]string{"env": "prod"}})
			require.NoError(t, err)
			assert.NotEmpty(t, applied)
			assert.Equal(t, before, in, "the input is not changed")
			tt.check(t, out)
		})
	}
}

func container(o *unstructured.Unstructured, i int) map[string]any {
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	return cs[i].(map[string]any)
}

func image(o *unstructured.Unstructured, field string, i int) string {
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", field)
	return cs[i].(map[string]any)["image"].(string)
}

func TestFieldOverrider(t *testing.T) {
	cm := `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: shop}
data:
  config.json: '{"db":{"host":"localhost","port":5432}}'
  app.yaml: |
    server:
      port: 80
    features: [a]
`
	policy := `apiVersion: policy.karmada.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: cfg}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]
  overrideRules:
    - overriders:
        fieldOverrider:
          - fieldPath: /data/config.json
            json:
              - {subPath: /db/host, operator: replace, value: db.east}
              - {subPath: /db/port, operator: remove}
          - fieldPath: /data/app.yaml
            yaml:
              - {subPath: /server/port, operator: replace, value: 8080}
              - {subPath: /features/-, operator: add, value: b}
`
	e := engine(t, policy)
	out, _, err := e.Override(object(t, cm), Cluster{Name: "east"})
	require.NoError(t, err)
	data, _, _ := unstructured.NestedStringMap(out.Object, "data")
	assert.JSONEq(t, `{"db":{"host":"db.east"}}`, data["config.json"])
	assert.Equal(t, "features:\n- a\n- b\nserver:\n  port: 8080\n", data["app.yaml"])
}

func TestOverrideOrderAcrossPolicies(t *testing.T) {
	rule := func(v string) string {
		return "- overriders: {labelsOverrider: [{operator: add, value: {k: " + v + "}}]}"
	}
	named := func(name, ns, sel, v string) string {
		return strings.Replace(ov(name, ns, rule(v)), "resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]", "resourceSelectors: "+sel, 1)
	}
	policies := strings.Join([]string{
		named("ns-b-name", "shop", "[{apiVersion: apps/v1, kind: Deployment, name: podinfo}]", "ns-name"),
		named("ns-a-kind", "shop", "[{apiVersion: apps/v1, kind: Deployment}]", "ns-kind"),
		named("ns-a-labels", "shop", "[{apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {keep: 'yes'}}}]", "ns-labels"),
		named("cl-z-name", "", "[{apiVersion: apps/v1, kind: Deployment, name: podinfo}]", "cl-name"),
		named("cl-all", "", "[]", "cl-all"),
		named("cl-a-kind", "", "[{apiVersion: apps/v1, kind: Deployment}]", "cl-kind"),
		named("other-ns", "elsewhere", "[]", "never"),
	}, "---\n")
	e := engine(t, policies)
	out, applied, err := e.Override(object(t, podinfoDeployment), Cluster{Name: "east"})
	require.NoError(t, err)
	var order []string
	for _, a := range applied {
		order = append(order, a.Policy.Name)
	}
	// Cluster policies first, then namespaced; within each ascending match
	// level then name; an empty selector list matches at the kind level.
	assert.Equal(t, []string{"cl-a-kind", "cl-all", "cl-z-name", "ns-a-kind", "ns-a-labels", "ns-b-name"}, order)
	assert.Equal(t, "ns-name", out.GetLabels()["k"], "the most specific namespaced policy applies last and wins")
}

func TestOverrideBindingLabel(t *testing.T) {
	policies := strings.Replace(ov("bound", "shop", "- overriders: {labelsOverrider: [{operator: add, value: {k: bound}}]}"), "kind: Deployment}]", "kind: Deployment, name: someone-else}]", 1)
	e := engine(t, policies)
	obj := object(t, podinfoDeployment)
	_, applied, err := e.Override(obj, Cluster{Name: "east"})
	require.NoError(t, err)
	assert.Empty(t, applied, "selectors alone do not match")
	obj.SetLabels(map[string]string{LabelOverridePolicy: "bound"})
	out, applied, err := e.Override(obj, Cluster{Name: "east"})
	require.NoError(t, err)
	require.Len(t, applied, 1)
	assert.Equal(t, MatchBinding, applied[0].Level)
	assert.Equal(t, "bound", out.GetLabels()["k"])
	obj.SetLabels(map[string]string{LabelClusterOverridePolicy: "missing"})
	_, _, err = e.Override(obj, Cluster{Name: "east"})
	assert.ErrorIs(t, err, ErrPolicyNotFound)
	assert.ErrorContains(t, err, `names ClusterOverridePolicy missing, which does not exist`)
}

func TestOverrideErrors(t *testing.T) {
	tests := []struct {
		name, rules, want string
	}{
		{"replace of a missing path", "- overriders: {plaintext: [{path: /spec/strategy/type, operator: replace, value: Recreate}]}",
			`Deployment shop/podinfo on cluster east: OverridePolicy shop/o spec.overrideRules[0].overriders.plaintext[0] at "/spec/strategy/type"`},
		{"field overrider on a non-string", "- overriders: {fieldOverrider: [{fieldPath: /spec/replicas, json: [{subPath: /a, operator: add, value: 1}]}]}",
			`overriders.fieldOverrider[0] at "/spec/replicas": /spec/replicas is int64, not a string`},
		{"image predicate path missing", "- overriders: {imageOverrider: [{predicate: {path: /spec/nothing}, component: Tag, operator: replace, value: x}]}",
			`overriders.imageOverrider[0] at "/spec/nothing": no image at /spec/nothing`},
		{"second rule fails: index names it", "- overriders: {labelsOverrider: [{operator: add, value: {a: b}}]}\n- overriders: {plaintext: [{path: /spec/x/y, operator: add, value: 1}]}",
			`spec.overrideRules[1].overriders.plaintext[0] at "/spec/x/y"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := engine(t, ov("o", "shop", tt.rules))
			_, _, err := e.Override(object(t, podinfoDeployment), Cluster{Name: "east"})
			require.Error(t, err)
			var oe *OverrideError
			require.True(t, errors.As(err, &oe))
			assert.ErrorIs(t, err, ErrOverride)
			assert.Equal(t, "east", oe.Cluster)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// A patch that fails on one cluster does not stop the others; replicas are
// divided before overrides, so an override of /spec/replicas wins.
func TestMaterialize(t *testing.T) {
	policies := `apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      weightPreference:
        staticWeightList:
          - {targetCluster: {clusterNames: [a]}, weight: 1}
          - {targetCluster: {clusterNames: [b, c]}, weight: 2}
---
` + ov("o", "shop", `- targetCluster: {clusterNames: [b]}
  overriders: {plaintext: [{path: /spec/replicas, operator: replace, value: 10}]}
- targetCluster: {clusterNames: [c]}
  overriders: {plaintext: [{path: /spec/missing/x, operator: replace, value: 1}]}`)
	e := engine(t, policies)
	obj := object(t, strings.Replace(podinfoDeployment, "replicas: 2", "replicas: 7", 1))
	p, err := e.Place([]*unstructured.Unstructured{obj}, clusterNames("a", "b", "c"))
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"a": 1, "b": 3, "c": 3}, targetsOf(p.Objects[0]))
	out := e.Materialize(p)
	require.Len(t, out, 3)
	replicas := func(i int) int64 {
		require.Len(t, out[i].Objects, 1)
		n, _, _ := unstructured.NestedInt64(out[i].Objects[0].Object, "spec", "replicas")
		return n
	}
	assert.Equal(t, "a", out[0].Cluster)
	assert.Equal(t, int64(1), replicas(0))
	assert.Equal(t, int64(10), replicas(1), "override after division wins")
	assert.Empty(t, out[2].Objects)
	require.Len(t, out[2].Errors, 1)
	assert.ErrorContains(t, out[2].Errors[0], "on cluster c: OverridePolicy shop/o spec.overrideRules[1].overriders.plaintext[0]")
	n, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	assert.Equal(t, int64(7), n, "the input object is not changed")

	// One cluster at a time gives each cluster what Materialize gives it.
	for _, want := range out {
		got, ok := e.MaterializeCluster(p, want.Cluster, nil)
		require.True(t, ok)
		assert.Equal(t, want, got, "cluster %s", want.Cluster)
	}
	svc := object(t, "apiVersion: v1\nkind: Service\nmetadata: {name: podinfo, namespace: shop}\n")
	p, err = e.Place([]*unstructured.Unstructured{obj, svc}, clusterNames("a", "b", "c"))
	require.NoError(t, err)
	require.NoError(t, e.PlaceDefault(p, []string{"a", "b", "c"}, "everywhere"))
	all, ok := e.MaterializeCluster(p, "b", nil)
	require.True(t, ok)
	require.Len(t, all.Objects, 2, "the Service goes everywhere")
	only, ok := e.MaterializeCluster(p, "b", func(k ObjectKey) bool { return k == KeyOf(obj) })
	require.True(t, ok)
	require.Len(t, only.Objects, 1, "the Service is left out")
	assert.Equal(t, KeyOf(obj), KeyOf(only.Objects[0]))
	nothing, ok := e.MaterializeCluster(p, "c", func(ObjectKey) bool { return false })
	require.True(t, ok)
	assert.Empty(t, nothing.Objects)
	assert.Empty(t, nothing.Errors, "an object left out fails nowhere")
	_, ok = e.MaterializeCluster(p, "z", nil)
	assert.False(t, ok, "a cluster the placement does not know")
}

func TestValuesOverrider(t *testing.T) {
	release := `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: shop}
spec:
  chart: {spec: {chart: podinfo}}
  values:
    replicaCount: 1
    image: {tag: 6.5.0, repository: ghcr.io/stefanprodan/podinfo}
    ingress: {enabled: false, hosts: [a]}
`
	policy := `apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: values, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease}]
  overrideRules:
    - targetCluster: {clusterNames: [east]}
      overriders:
        plaintext: [{path: /spec/values/replicaCount, operator: replace, value: 2}]
        valuesOverrider:
          - merge: {replicaCount: 3, image: {repository: null}, ingress: {hosts: [east.example.com]}}
          - {path: /image/tag, operator: replace, value: 6.6.0}
          - {path: /resources, operator: add, value: {limits: {cpu: 1}}}
`
	e := engine(t, policy)
	out, applied, err := e.Override(object(t, release), Cluster{Name: "east"})
	require.NoError(t, err)
	vals, _, _ := unstructured.NestedMap(out.Object, "spec", "values")
	assert.Equal(t, map[string]any{
		"replicaCount": int64(3),
		"image":        map[string]any{"tag": "6.6.0"},
		"ingress":      map[string]any{"enabled": false, "hosts": []any{"east.example.com"}},
		"resources":    map[string]any{"limits": map[string]any{"cpu": int64(1)}},
	}, vals, "values overriders run after plaintext, merge deletes with null and replaces lists")
	require.Len(t, applied, 4)
	assert.Equal(t, "overriders.valuesOverrider[2]", applied[3].Overrider)
	assert.Equal(t, []string{"/spec/values/resources"}, applied[3].Targets)

	out, applied, err = e.Override(object(t, release), Cluster{Name: "west"})
	require.NoError(t, err)
	assert.Empty(t, applied)
	assert.Equal(t, object(t, release), out)
}

func TestApplyValues(t *testing.T) {
	in := map[string]any{"a": map[string]any{"b": int64(1)}}
	out, err := ApplyValues(in, []ValuesOverrider{{Merge: &JSON{Raw: []byte(`{"a":{"c":2}}`)}}, {Path: "/a/b", Operator: OverriderOpRemove}})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a": map[string]any{"c": int64(2)}}, out)
	assert.Equal(t, map[string]any{"a": map[string]any{"b": int64(1)}}, in, "input unchanged")
	_, err = ApplyValues(in, []ValuesOverrider{{Path: "/x/y", Operator: OverriderOpReplace, Value: JSON{Raw: []byte("1")}}})
	assert.ErrorContains(t, err, "valuesOverrider[0]")
	out, err = ApplyValues(nil, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{}, out)
}

func TestParseImage(t *testing.T) {
	tests := []struct {
		in   string
		want Image
		err  string
	}{
		{"nginx", Image{Repository: "nginx"}, ""},
		{"nginx:1.25", Image{Repository: "nginx", Tag: "1.25"}, ""},
		{"library/nginx:1.25", Image{Repository: "library/nginx", Tag: "1.25"}, ""},
		{"ghcr.io/a/b:1", Image{Registry: "ghcr.io", Repository: "a/b", Tag: "1"}, ""},
		{"localhost:5000/a", Image{Registry: "localhost:5000", Repository: "a"}, ""},
		{"localhost/a:x", Image{Registry: "localhost", Repository: "a", Tag: "x"}, ""},
		{"a/b@sha256:0123456789abcdef0123456789abcdef", Image{Repository: "a/b", Digest: "sha256:0123456789abcdef0123456789abcdef"}, ""},
		{"", Image{}, "empty image reference"},
		{"a@sha256:zz", Image{}, "bad digest"},
		{"a:", Image{}, "empty tag"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseImage(tt.in)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.in, got.String())
		})
	}
}

// RFC 6902 replace needs an existing target, also inside an existing object.
func TestReplaceNeedsExistingKey(t *testing.T) {
	e := engine(t, ov("o", "shop", "- overriders: {plaintext: [{path: /spec/maxReplicas, operator: replace, value: 4}]}"))
	_, _, err := e.Override(object(t, podinfoDeployment), Cluster{Name: "east"})
	assert.ErrorContains(t, err, `overriders.plaintext[0] at "/spec/maxReplicas": replace operation does not apply: no value at /spec/maxReplicas`)
}
