package policy

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/peertally"
)

// The Karmada peer suite: data-driven cases of karmada-io/karmada's own unit
// tests, ported as YAML tables under testdata/peer/karmada. Karmada's inputs
// and expected outputs are the oracle; the code under test is helmfleet's.
//
// Every case is one of:
//   - ported: it must give Karmada's expected result;
//   - a documented difference (field `difference`): helmfleet deliberately
//     differs, the reason says why, and the case checks what helmfleet does
//     instead (field `helmfleet`, `invalid` or `wantErr`), so it is still a
//     test;
//   - skipped (field `skip`, on a case or on a group of test functions with
//     their `count` of cases): it exercises Karmada internals that helmfleet
//     does not model; the reason says which.
//
// Run with -v, TestPeerKarmada logs a tally per Karmada test function. Every
// disagreement fails its own case; the final check (99% of the ported cases
// agree) guards the tally itself.

// peerFile is one data file: the commit read and groups of cases, each
// group naming the Karmada test file and test function it comes from.
type peerFile[C any] struct {
	Repository string         `json:"repository"`
	Commit     string         `json:"commit"`
	Fixtures   []any          `json:"fixtures,omitempty"` // YAML anchors the cases share
	Pool       []peerPoolItem `json:"pool,omitempty"`     // dependencies.yaml
	Groups     []peerGroup[C] `json:"groups"`
}

type peerGroup[C any] struct {
	Source string `json:"source"`
	Test   string `json:"test"`
	Cases  []C    `json:"cases,omitempty"`
	// Skip, with Count (how many cases), marks test functions of a cited
	// file that are not ported as a whole; the reason says why.
	Skip  string `json:"skip,omitempty"`
	Count int    `json:"count,omitempty"`
}

// peerMeta is what every case carries.
type peerMeta struct {
	Name       string `json:"name"`
	Skip       string `json:"skip,omitempty"`
	Difference string `json:"difference,omitempty"`
}

func (m peerMeta) meta() peerMeta { return m }

type peerCase interface{ meta() peerMeta }

// karmadaCommit is the karmada-io/karmada commit every table was read at.
const karmadaCommit = "f8fdd02df3760fd9521624f284877fa84e7be6ef"

// peerReport collects the tally of one TestPeerKarmada run.
type peerReport struct {
	mu     sync.Mutex
	tallys map[string]*peertally.Tally
}

func loadPeer[C any](t *testing.T, file string) peerFile[C] {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "peer", "karmada", file))
	require.NoError(t, err)
	var f peerFile[C]
	require.NoError(t, yaml.UnmarshalStrict(raw, &f), file)
	require.Equal(t, "karmada-io/karmada", f.Repository, file)
	require.Equal(t, karmadaCommit, f.Commit, file)
	return f
}

// runPeer runs every case of a file. run checks one case: for a documented
// difference it must check helmfleet's own expectation, otherwise Karmada's.
func runPeer[C peerCase](t *testing.T, r *peerReport, file string, run func(t *testing.T, c C)) {
	f := loadPeer[C](t, file)
	for _, g := range f.Groups {
		key := strings.TrimSuffix(file, ".yaml") + ": " + g.Source + " " + g.Test
		if g.Skip != "" {
			require.Empty(t, g.Cases, key)
			require.Positive(t, g.Count, "%s: a skipped group says how many cases it has", key)
			t.Run(g.Test, func(t *testing.T) { t.Skip("not ported: " + g.Skip) })
			r.mu.Lock()
			r.tallys[key] = &peertally.Tally{Skipped: g.Count}
			r.mu.Unlock()
			continue
		}
		t.Run(g.Test, func(t *testing.T) {
			require.NotEmpty(t, g.Cases, key)
			for i, c := range g.Cases {
				m := c.meta()
				require.NotEmpty(t, m.Name, "%s case %d has no name", key, i)
				require.False(t, m.Skip != "" && m.Difference != "", "%s: %s is both skipped and a difference", key, m.Name)
				ok := t.Run(m.Name, func(t *testing.T) {
					if m.Skip != "" {
						t.Skip("not ported: " + m.Skip)
					}
					if m.Difference != "" {
						t.Log("documented difference: " + m.Difference)
					}
					run(t, c)
				})
				r.mu.Lock()
				tl := r.tallys[key]
				if tl == nil {
					tl = &peertally.Tally{}
					r.tallys[key] = tl
				}
				tl.Count(m.Skip != "", m.Difference != "", ok)
				r.mu.Unlock()
			}
		})
	}
}

func TestPeerKarmada(t *testing.T) {
	r := &peerReport{tallys: map[string]*peertally.Tally{}}
	for _, s := range []struct {
		name string
		run  func(*testing.T, *peerReport)
	}{
		{"division", testPeerDivision},
		{"clusters", testPeerClusters},
		{"selectors", testPeerSelectors},
		{"overrides", testPeerOverrides},
		{"dependencies", testPeerDependencies},
		{"images", testPeerImages},
	} {
		t.Run(s.name, func(t *testing.T) { s.run(t, r) })
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	keys, total := peertally.Sum(r.tallys)
	var b strings.Builder
	fmt.Fprintf(&b, "karmada-io/karmada@%s\n%-100s %6s %6s %6s %6s\n", karmadaCommit[:12], "GROUP", "PORTED", "AGREE", "DIFF", "SKIP")
	for _, k := range keys {
		tl := r.tallys[k]
		fmt.Fprintf(&b, "%-100s %6d %6d %6d %6d\n", k, tl.Ported, tl.Agree, tl.Difference, tl.Skipped)
	}
	fmt.Fprintf(&b, "%-100s %6d %6d %6d %6d\n", "TOTAL", total.Ported, total.Agree, total.Difference, total.Skipped)
	t.Log("\n" + b.String())
	// The bar: 99% of all ported cases agree; the rest are documented
	// differences (each of which checks what helmfleet does instead).
	peertally.Check(t, r.tallys, func(total peertally.Tally) {
		assert.GreaterOrEqual(t, float64(total.Agree)/float64(total.Ported), 0.99, "share of ported Karmada cases that agree")
	})
}

// ---- division -------------------------------------------------------------

type peerDivisionCase struct {
	peerMeta
	Replicas int64            `json:"replicas"`
	Weights  map[string]int64 `json:"weights"`
	UID      string           `json:"uid"`
	// Mode "" calls Divide; the others place a Deployment with Engine.Place:
	// static, duplicated and placement on Clusters, dynamic and aggregated
	// on the clusters of Available.
	Mode             string              `json:"mode"`
	Clusters         []string            `json:"clusters"`
	WeightPreference *ClusterPreferences `json:"weightPreference"`
	// ReplicaScheduling is the whole strategy, for mode strategy.
	ReplicaScheduling *ReplicaSchedulingStrategy `json:"replicaScheduling"`
	// Placement is the whole placement, for mode placement.
	Placement *PlacementSpec     `json:"placement"`
	Available map[string]int64   `json:"available"`
	Want      map[string]int64   `json:"want"`
	WantAny   []map[string]int64 `json:"wantAny"`
	WantErr   bool               `json:"wantErr"`
	// CallerErr: Karmada's helper gives Want without an error, but its
	// caller (the level Engine.Place answers at) fails; the reason says
	// where. Place must give Want and ErrUnschedulable.
	CallerErr string `json:"callerErr"`
}

// nonZero drops clusters with no replicas: Divide omits them.
func nonZero(m map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func testPeerDivision(t *testing.T, r *peerReport) {
	runPeer(t, r, "division.yaml", func(t *testing.T, c peerDivisionCase) {
		var got map[string]int64
		switch c.Mode {
		case "":
			var ws []Weight
			for _, k := range sortedKeys(c.Weights) {
				ws = append(ws, Weight{Cluster: k, Weight: c.Weights[k]})
			}
			targets, err := Divide(c.Replicas, ws, c.UID)
			require.NoError(t, err)
			got = map[string]int64{}
			for _, tg := range targets {
				got[tg.Cluster] = tg.Replicas
			}
		case "static", "duplicated", "dynamic", "aggregated", "strategy", "placement":
			rs := &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided}
			var clusters []Cluster
			for _, n := range c.Clusters {
				clusters = append(clusters, Cluster{Name: n})
			}
			for _, k := range sortedKeys(c.Available) {
				clusters = append(clusters, Cluster{Name: k, AvailableReplicas: c.Available[k]})
			}
			switch c.Mode {
			case "static":
				rs.ReplicaDivisionPreference = ReplicaDivisionPreferenceWeighted
				rs.WeightPreference = c.WeightPreference
			case "duplicated":
				rs.ReplicaSchedulingType = ReplicaSchedulingTypeDuplicated
			case "dynamic":
				rs.ReplicaDivisionPreference = ReplicaDivisionPreferenceWeighted
				rs.WeightPreference = &ClusterPreferences{DynamicWeight: DynamicWeightByAvailableReplicas}
			case "aggregated":
				rs.ReplicaDivisionPreference = ReplicaDivisionPreferenceAggregated
			case "strategy":
				rs = c.ReplicaScheduling
			}
			spec := PlacementSpec{ReplicaScheduling: rs}
			if c.Mode == "placement" {
				require.NotNil(t, c.Placement)
				spec = *c.Placement
			}
			p := &ClusterPropagationPolicy{Spec: PropagationSpec{
				ResourceSelectors: []ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
				Placement:         spec,
			}}
			p.Name = "p"
			var set Set
			require.NoError(t, set.Add(p))
			e, err := NewEngine(set)
			if c.WantErr && err != nil {
				// Karmada fails at scheduling; helmfleet refuses the policy.
				assert.ErrorIs(t, err, ErrInvalid)
				return
			}
			require.NoError(t, err)
			obj := object(t, fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: n}\nspec: {replicas: %d}\n", c.Replicas))
			pl, err := e.Place([]*unstructured.Unstructured{obj}, clusters)
			if c.CallerErr != "" {
				require.False(t, c.WantErr, "the helper gives no error")
				require.NotNil(t, c.Want)
				t.Log("Karmada's caller fails: " + c.CallerErr)
			}
			if c.WantErr || c.CallerErr != "" {
				assert.ErrorIs(t, err, ErrUnschedulable)
				if c.Want == nil {
					return
				}
			} else {
				require.NoError(t, err)
			}
			// Place lists every cluster the object goes to, with 0 replicas
			// when it has none: compare exactly.
			assert.Equal(t, c.Want, targetsOf(pl.Objects[0]))
			return
		default:
			t.Fatalf("unknown mode %q", c.Mode)
		}
		if c.WantAny != nil {
			for _, w := range c.WantAny {
				if assert.ObjectsAreEqual(nonZero(w), got) {
					return
				}
			}
			t.Errorf("got %v, want one of %v", got, c.WantAny)
			return
		}
		assert.Equal(t, nonZero(c.Want), got)
	})
}

// ---- clusters -------------------------------------------------------------

type peerCluster struct {
	Name     string            `json:"name"`
	Labels   map[string]string `json:"labels"`
	Provider string            `json:"provider"`
	Region   string            `json:"region"`
	Zones    []string          `json:"zones"`
	Taints   []corev1.Taint    `json:"taints"`
}

type peerClustersCase struct {
	peerMeta
	Cluster   peerCluster      `json:"cluster"`
	Affinity  *ClusterAffinity `json:"affinity"`
	Placement *PlacementSpec   `json:"placement"`
	Want      bool             `json:"want"`
	// Refused: helmfleet's Validate refuses a policy with this affinity, so
	// an Engine never places with it; the reason says whether Karmada's
	// admission refuses it too.
	Refused string `json:"refused"`
}

func testPeerClusters(t *testing.T, r *peerReport) {
	runPeer(t, r, "clusters.yaml", func(t *testing.T, c peerClustersCase) {
		cl := Cluster{Name: c.Cluster.Name, Labels: c.Cluster.Labels, Provider: c.Cluster.Provider,
			Region: c.Cluster.Region, Zones: c.Cluster.Zones, Taints: c.Cluster.Taints}
		var pl PlacementSpec
		switch {
		case c.Placement != nil && c.Affinity != nil:
			t.Fatal("both placement and affinity")
		case c.Placement != nil:
			pl = *c.Placement
		case c.Affinity != nil:
			// Karmada's ClusterMatches and matchZones: the helper's answer.
			assert.Equal(t, c.Want, c.Affinity.Matches(cl), "ClusterAffinity.Matches")
			pl.ClusterAffinity = c.Affinity
		}
		p := &ClusterPropagationPolicy{Spec: PropagationSpec{
			ResourceSelectors: []ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap"}},
			Placement:         pl,
		}}
		p.Name = "p"
		var set Set
		require.NoError(t, set.Add(p))
		e, err := NewEngine(set)
		if c.Refused != "" {
			require.NotNil(t, c.Affinity, "only a helper case may have a policy Validate refuses")
			t.Log("Validate refuses the policy: " + c.Refused)
			assert.ErrorIs(t, err, ErrInvalid)
			return
		}
		require.NoError(t, err)
		// The scheduler's answer: whether the ConfigMap goes to the cluster.
		pc, err := e.Place([]*unstructured.Unstructured{object(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: n}\n")}, []Cluster{cl})
		if c.Want {
			require.NoError(t, err)
		}
		_, got := pc.Objects[0].Cluster(cl.Name)
		assert.Equal(t, c.Want, got, "Engine.Place")
	})
}

// ---- selectors and priority -------------------------------------------------

type peerPolicy struct {
	Name      string             `json:"name"`
	Priority  *int32             `json:"priority"`
	Selectors []ResourceSelector `json:"selectors"`
}

type peerSelectorsCase struct {
	peerMeta
	Object    map[string]any     `json:"object"`
	Selectors []ResourceSelector `json:"selectors"`
	Level     string             `json:"level"`
	Match     *bool              `json:"match"`
	// Refused: helmfleet's Validate refuses a policy with these selectors;
	// the reason says whether Karmada's admission refuses it too.
	Refused string `json:"refused"`

	Kind      string       `json:"kind"`
	Namespace string       `json:"namespace"`
	Policies  []peerPolicy `json:"policies"`
	Want      *string      `json:"want"`
}

func testPeerSelectors(t *testing.T, r *peerReport) {
	runPeer(t, r, "selectors.yaml", func(t *testing.T, c peerSelectorsCase) {
		obj := &unstructured.Unstructured{Object: fromJSON(c.Object).(map[string]any)}
		if c.Want != nil {
			require.Nil(t, c.Selectors)
			var set Set
			for _, pp := range c.Policies {
				spec := PropagationSpec{ResourceSelectors: pp.Selectors, Priority: pp.Priority}
				switch c.Kind {
				case KindPropagationPolicy:
					p := &PropagationPolicy{Spec: spec}
					p.Name, p.Namespace = pp.Name, cmp.Or(c.Namespace, "test")
					require.NoError(t, set.Add(p))
				case KindClusterPropagationPolicy:
					p := &ClusterPropagationPolicy{Spec: spec}
					p.Name = pp.Name
					require.NoError(t, set.Add(p))
				default:
					t.Fatalf("kind %q", c.Kind)
				}
			}
			e, err := NewEngine(set)
			require.NoError(t, err)
			sel, err := e.Select(obj)
			require.NoError(t, err)
			got := ""
			if sel != nil {
				got = sel.Policy.Name
				assert.Equal(t, c.Kind, sel.Policy.Kind)
			}
			assert.Equal(t, *c.Want, got)
			return
		}
		require.True(t, c.Match != nil || c.Level != "", "case checks nothing")
		check := func(level MatchLevel, layer string) {
			if c.Match != nil {
				assert.Equal(t, *c.Match, level != MatchNone, layer)
			}
			if c.Level != "" {
				assert.Equal(t, c.Level, level.String(), layer)
			}
		}
		// Karmada's ResourceSelectorPriority, ResourceMatches and their
		// variants over several selectors: the helper's answer.
		check(MatchObject(obj, c.Selectors...), "MatchObject")
		if len(c.Selectors) == 1 {
			check(c.Selectors[0].Match(obj), "ResourceSelector.Match")
		}
		p := &ClusterPropagationPolicy{Spec: PropagationSpec{ResourceSelectors: c.Selectors}}
		p.Name = "p"
		var set Set
		require.NoError(t, set.Add(p))
		e, err := NewEngine(set)
		if c.Refused != "" {
			t.Log("Validate refuses the policy: " + c.Refused)
			assert.ErrorIs(t, err, ErrInvalid)
			return
		}
		require.NoError(t, err)
		// The detector's answer: the policy's implicit priority.
		cands, err := e.Candidates(obj)
		require.NoError(t, err)
		level := MatchNone
		if len(cands) > 0 {
			level = cands[0].Level
		}
		check(level, "Engine.Candidates")
	})
}

// ---- overrides ------------------------------------------------------------

type peerExpect struct {
	Path  string `json:"path"`
	Value any    `json:"value"`
}

type peerOverridesCase struct {
	peerMeta
	Object     map[string]any   `json:"object"`
	Cluster    string           `json:"cluster"`
	Overriders map[string]any   `json:"overriders"`
	Policies   []map[string]any `json:"policies"`
	Expect     []peerExpect     `json:"expect"`
	Applied    []string         `json:"applied"`
	// Helmfleet replaces Expect for a documented difference.
	Helmfleet []peerExpect `json:"helmfleet"`
}

func testPeerOverrides(t *testing.T, r *peerReport) {
	runPeer(t, r, "overrides.yaml", func(t *testing.T, c peerOverridesCase) {
		obj := &unstructured.Unstructured{Object: fromJSON(c.Object).(map[string]any)}
		docs := c.Policies
		if c.Overriders != nil {
			require.Nil(t, docs)
			docs = []map[string]any{{"kind": KindClusterOverridePolicy, "name": "peer", "spec": map[string]any{
				"resourceSelectors": []any{map[string]any{"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind()}},
				"overrideRules":     []any{map[string]any{"overriders": c.Overriders}},
			}}}
		}
		var set Set
		for _, d := range docs {
			md := map[string]any{"name": d["name"]}
			if ns, ok := d["namespace"]; ok {
				md["namespace"] = ns
			}
			raw, err := yaml.Marshal(map[string]any{"apiVersion": GroupVersion, "kind": d["kind"], "metadata": md, "spec": d["spec"]})
			require.NoError(t, err)
			p, err := Decode(raw)
			require.NoError(t, err)
			require.NoError(t, set.Add(p))
		}
		e, err := NewEngine(set)
		require.NoError(t, err)
		before := obj.DeepCopy()
		out, applied, err := e.Override(obj, Cluster{Name: cmp.Or(c.Cluster, "member1")})
		require.NoError(t, err)
		assert.Equal(t, before, obj, "Override must not change its input")
		want := c.Expect
		if c.Difference != "" {
			require.NotNil(t, c.Helmfleet, "a documented difference here must say what helmfleet does")
			want = c.Helmfleet
		}
		require.True(t, want != nil || c.Applied != nil, "case checks nothing")
		for _, x := range want {
			tokens, err := parsePointer(x.Path)
			require.NoError(t, err)
			got, ok := lookup(out.Object, tokens)
			require.True(t, ok, "%s is absent", x.Path)
			assert.Equal(t, fromJSON(x.Value), got, x.Path)
		}
		if c.Applied != nil {
			var got []string
			for _, a := range applied {
				s := fmt.Sprintf("%s#%d", a.Policy, a.Rule)
				if len(got) == 0 || got[len(got)-1] != s {
					got = append(got, s)
				}
			}
			assert.Equal(t, c.Applied, got)
		}
	})
}

// ---- dependencies ---------------------------------------------------------

type peerPoolItem struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

type peerDependenciesCase struct {
	peerMeta
	Object map[string]any `json:"object"`
	Want   []string       `json:"want"`
}

func testPeerDependencies(t *testing.T, r *peerReport) {
	pool := loadPeer[peerDependenciesCase](t, "dependencies.yaml").Pool
	require.NotEmpty(t, pool)
	runPeer(t, r, "dependencies.yaml", func(t *testing.T, c peerDependenciesCase) {
		obj := &unstructured.Unstructured{Object: fromJSON(c.Object).(map[string]any)}
		p := &ClusterPropagationPolicy{Spec: PropagationSpec{
			ResourceSelectors: []ResourceSelector{{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind()}},
			PropagateDeps:     true,
		}}
		p.Name = "p"
		var set Set
		require.NoError(t, set.Add(p))
		e, err := NewEngine(set)
		require.NoError(t, err)
		objs := []*unstructured.Unstructured{obj}
		for _, d := range pool {
			objs = append(objs, object(t, fmt.Sprintf("apiVersion: v1\nkind: %s\nmetadata: {name: %s, namespace: %s}\n", d.Kind, d.Name, obj.GetNamespace())))
		}
		pl, err := e.Place(objs, clusterNames("member1"))
		require.NoError(t, err)
		leader := KeyOf(obj)
		require.NotEmpty(t, pl.Get(leader).Targets)
		got := []string{}
		for _, op := range pl.Objects {
			if slices.Contains(op.Follows, leader) {
				got = append(got, op.Object.Kind+"/"+op.Object.Name)
				_, there := op.Cluster("member1")
				assert.True(t, there, "%s follows but is not placed with it", op.Object)
			}
		}
		want := slices.Clone(c.Want)
		slices.Sort(want)
		slices.Sort(got)
		assert.Equal(t, want, got)
	})
}

// ---- images ---------------------------------------------------------------

type peerImageStep struct {
	Overrider ImageOverrider `json:"overrider"`
	Want      string         `json:"want"`
}

type peerImagesCase struct {
	peerMeta
	Image      string          `json:"image"`
	Registry   string          `json:"registry"`
	Repository string          `json:"repository"`
	Tag        string          `json:"tag"`
	Digest     string          `json:"digest"`
	Steps      []peerImageStep `json:"steps"`
	Invalid    bool            `json:"invalid"`
}

func testPeerImages(t *testing.T, r *peerReport) {
	runPeer(t, r, "images.yaml", func(t *testing.T, c peerImagesCase) {
		if c.Steps == nil {
			im, err := ParseImage(c.Image)
			if c.Difference != "" {
				require.True(t, c.Invalid, "a documented difference here must say what helmfleet does")
			}
			if c.Invalid {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, Image{Registry: c.Registry, Repository: c.Repository, Tag: c.Tag, Digest: c.Digest}, im)
			assert.Equal(t, c.Image, im.String())
			return
		}
		cur := c.Image
		for i, st := range c.Steps {
			p := &ClusterOverridePolicy{Spec: OverrideSpec{
				ResourceSelectors: []ResourceSelector{{APIVersion: "v1", Kind: "Pod"}},
				OverrideRules:     []RuleWithCluster{{Overriders: Overriders{ImageOverrider: []ImageOverrider{st.Overrider}}}},
			}}
			p.Name = "p"
			var set Set
			require.NoError(t, set.Add(p))
			e, err := NewEngine(set)
			require.NoError(t, err)
			pod := object(t, fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: n}\nspec: {containers: [{name: c, image: %q}]}\n", cur))
			out, _, err := e.Override(pod, Cluster{Name: "member1"})
			require.NoError(t, err)
			got, _ := lookup(out.Object, []string{"spec", "containers", "0", "image"})
			assert.Equal(t, st.Want, got, "step %d", i)
			cur, _ = got.(string)
		}
	})
}
