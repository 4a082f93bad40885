package helmv4_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/testcharts"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/helmv4"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// manifestObjects parses a manifest into its objects by kind/namespace/
// name, and their order.
func manifestObjects(t *testing.T, m string) (map[string]map[string]any, []string) {
	t.Helper()
	objs := map[string]map[string]any{}
	var order []string
	for _, doc := range strings.Split(m, "\n---") {
		var o map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &o))
		if len(o) == 0 {
			continue
		}
		u := unstructured.Unstructured{Object: o}
		k := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
		objs[k] = o
		order = append(order, k)
	}
	return objs, order
}

// hookSummary is what Helm records of a hook: its object, events, weight
// and delete policies. A name's random suffix (podinfo's test pods end
// in randAlphaNum 5, new at each render by either engine) is left out.
func hookSummary(h *helmrelease.Hook) string {
	name := h.Name
	if i := strings.LastIndex(name, "-"); i > 0 && len(name)-i-1 == 5 {
		name = name[:i] + "-?????"
	}
	return fmt.Sprintf("%s/%s events=%v weight=%d delete=%v", h.Kind, name, h.Events, h.Weight, h.DeletePolicies)
}

// movedKeys lists the keys of b that are out of a's order: b less its
// longest common subsequence with a.
func movedKeys(a, b []string) []string {
	n, m := len(a), len(b)
	l := make([][]int, n+1)
	for i := range l {
		l[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var moved []string
	i, j := 0, 0
	for j < m {
		switch {
		case i < n && a[i] == b[j]:
			i, j = i+1, j+1
		case i < n && l[i+1][j] >= l[i][j+1]:
			i++
		default:
			moved = append(moved, b[j])
			j++
		}
	}
	return moved
}

// engineDiffs installs rel with both engines on fresh memory clusters and
// lists what differs between the two records and clusters: objects of
// the manifest (missing on one side, or different), their order, hooks,
// and the live objects.
func engineDiffs(t *testing.T, rel *release.Release) []string {
	t.Helper()
	var recs [2]*helmrelease.Release
	var live [2][]string
	for i, e := range []reconcile.Engine{nil, helmv4.Engine{}} {
		c := memory.New("member")
		r := rel.DeepCopy()
		res, err := reconciler(t, e).Reconcile(t.Context(), c, r)
		require.NoError(t, err)
		require.Equal(t, reconcile.ActionInstall, res.Actions[0])
		recs[i] = res.Helm
		for _, o := range c.Objects() {
			live[i] = append(live[i], release.RefOf(o).String())
		}
	}
	var diffs []string
	o3, order3 := manifestObjects(t, recs[0].Manifest)
	o4, order4 := manifestObjects(t, recs[1].Manifest)
	for _, k := range order3 {
		switch b, ok := o4[k]; {
		case !ok:
			diffs = append(diffs, "manifest: only v3: "+k)
		case !equality.Semantic.DeepEqual(o3[k], b):
			diffs = append(diffs, "manifest: differs: "+k)
		}
	}
	for _, k := range order4 {
		if _, ok := o3[k]; !ok {
			diffs = append(diffs, "manifest: only v4: "+k)
		}
	}
	if moved := movedKeys(order3, order4); len(moved) > 0 {
		diffs = append(diffs, fmt.Sprintf("manifest: order: v4 moves %v", moved))
	}
	h3, h4 := make([]string, 0), make([]string, 0)
	for _, h := range recs[0].Hooks {
		h3 = append(h3, hookSummary(h))
	}
	for _, h := range recs[1].Hooks {
		h4 = append(h4, hookSummary(h))
	}
	if !slices.Equal(h3, h4) {
		diffs = append(diffs, fmt.Sprintf("hooks: v3 %v, v4 %v", h3, h4))
	}
	if !slices.Equal(live[0], live[1]) {
		diffs = append(diffs, fmt.Sprintf("live objects: v3 %d, v4 %d", len(live[0]), len(live[1])))
	}
	if m3, m4 := recs[0].Labels[helmv4.ApplyMethodLabel], recs[1].Labels[helmv4.ApplyMethodLabel]; m3 != m4 {
		diffs = append(diffs, fmt.Sprintf("apply method: v3 %q, v4 %q", m3, m4))
	}
	return diffs
}

// The vendored charts install on release/memory with both engines, with
// the same objects, hooks and live objects; what differs is Helm's own
// change between its majors, listed here (and in the package's notes):
//   - the apply method Helm v4 records (server-side by default);
//   - podinfo: a null in the chart's values (resources.limits) is
//     rendered "limits: null" by Helm v3 and left out by Helm v4 (the
//     object the API server stores is the same);
//   - kube-prometheus-stack: Helm v4's install order knows the webhook
//     configurations and puts them after every other known kind, before
//     custom resources; Helm v3 sorts them with the unknown kinds, by
//     kind name among the custom resources.
func TestRealChartsBothEngines(t *testing.T) {
	ssa := `apply method: v3 "", v4 "ssa"`
	want := map[testcharts.Name][]string{
		testcharts.Podinfo:          {"manifest: differs: Deployment/monitoring/podinfo", ssa},
		testcharts.NodeExporter:     {ssa},
		testcharts.KubeStateMetrics: {ssa},
		testcharts.IngressNginx:     {ssa},
		testcharts.KubePrometheusStack: {
			"manifest: order: v4 moves [ValidatingWebhookConfiguration//kube-prometheus-stack-admission Alertmanager/monitoring/kube-prometheus-stack-alertmanager]",
			ssa},
	}
	for _, name := range testcharts.All {
		t.Run(string(name), func(t *testing.T) {
			diffs := engineDiffs(t, testcharts.Release(name))
			for _, d := range diffs {
				t.Log(d)
			}
			assert.Equal(t, want[name], diffs)
		})
	}
}
