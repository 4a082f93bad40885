package policy

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// conflictPolicies: "web" places the Deployment "web" and lets its
// dependencies follow; "cfg" places the ConfigMap "own" by itself; "ovw"
// places the Deployment "zz" with Overwrite and lets its dependencies
// follow. web and cfg are extra spec lines of those two policies.
func conflictPolicies(web, cfg string) string {
	return conflictPolicy("web", "  propagateDeps: true\n"+web, "{apiVersion: apps/v1, kind: Deployment, name: web}", "a") + "---\n" +
		conflictPolicy("cfg", cfg, "{apiVersion: v1, kind: ConfigMap, name: own}", "a") + "---\n" +
		conflictPolicy("ovw", "  propagateDeps: true\n  conflictResolution: Overwrite", "{apiVersion: apps/v1, kind: Deployment, name: zz}", "b")
}

// conflictPolicy is a PropagationPolicy in namespace shop with extra spec
// lines, one resource selector and one cluster.
func conflictPolicy(name, extra, selector, cluster string) string {
	return "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: " + name + ", namespace: shop}\nspec:\n" +
		extra + "\n  resourceSelectors: [" + selector + "]\n  placement: {clusterAffinity: {clusterNames: [" + cluster + "]}}\n"
}

// conflictWorkload returns a Deployment that names ConfigMap cm; annotation, when
// set, is its conflict-resolution annotation.
func conflictWorkload(name, cm, annotation string) string {
	meta := "metadata: {name: " + name + ", namespace: shop}\n"
	if annotation != "" {
		meta = "metadata:\n  name: " + name + "\n  namespace: shop\n  annotations: {work.karmada.io/conflict-resolution: " + annotation + "}\n"
	}
	return "apiVersion: apps/v1\nkind: Deployment\n" + meta + `spec:
  template:
    spec:
      containers: [{name: c, envFrom: [{configMapRef: {name: ` + cm + `}}]}]
`
}

func conflictConfigMap(name, annotation string) string {
	if annotation == "" {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: shop}\n"
	}
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: shop\n  annotations: {work.karmada.io/conflict-resolution: " + annotation + "}\n"
}

func TestPlaceConflictResolution(t *testing.T) {
	web := ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	webPolicy := Ref{Kind: KindPropagationPolicy, Namespace: "shop", Name: "web"}
	cfgPolicy := Ref{Kind: KindPropagationPolicy, Namespace: "shop", Name: "cfg"}
	ovwPolicy := Ref{Kind: KindPropagationPolicy, Namespace: "shop", Name: "ovw"}
	cm := func(name string) ObjectKey {
		return ObjectKey{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: name}
	}
	tests := []struct {
		name     string
		web, cfg string // conflictResolution lines of the policies web and cfg
		objs     string
		key      ObjectKey
		want     Conflict
	}{
		{name: "empty means Abort by default", objs: conflictWorkload("web", "dep", ""), key: web,
			want: Conflict{Resolution: ConflictAbort, Source: ConflictFromDefault, Policy: webPolicy}},
		{name: "explicit Abort", web: "  conflictResolution: Abort", objs: conflictWorkload("web", "dep", ""), key: web,
			want: Conflict{Resolution: ConflictAbort, Source: ConflictFromPolicy, Policy: webPolicy}},
		{name: "Overwrite from the policy", web: "  conflictResolution: Overwrite", objs: conflictWorkload("web", "dep", ""), key: web,
			want: Conflict{Resolution: ConflictOverwrite, Source: ConflictFromPolicy, Policy: webPolicy}},
		{name: "annotation overwrite beats policy Abort", web: "  conflictResolution: Abort", objs: conflictWorkload("web", "dep", "overwrite"), key: web,
			want: Conflict{Resolution: ConflictOverwrite, Source: ConflictFromAnnotation, Policy: webPolicy}},
		{name: "annotation abort beats policy Overwrite", web: "  conflictResolution: Overwrite", objs: conflictWorkload("web", "dep", "abort"), key: web,
			want: Conflict{Resolution: ConflictAbort, Source: ConflictFromAnnotation, Policy: webPolicy}},
		{name: "a dependency takes the policy of the workload it follows", web: "  conflictResolution: Overwrite",
			objs: conflictWorkload("web", "dep", "") + "---\n" + conflictConfigMap("dep", ""), key: cm("dep"),
			want: Conflict{Resolution: ConflictOverwrite, Source: ConflictFromPolicy, Policy: webPolicy}},
		{name: "a dependency's own annotation beats its workload's policy", web: "  conflictResolution: Overwrite",
			objs: conflictWorkload("web", "dep", "") + "---\n" + conflictConfigMap("dep", "abort"), key: cm("dep"),
			want: Conflict{Resolution: ConflictAbort, Source: ConflictFromAnnotation, Policy: webPolicy}},
		{name: "a dependency's workload annotation does not reach it", web: "  conflictResolution: Abort",
			objs: conflictWorkload("web", "dep", "overwrite") + "---\n" + conflictConfigMap("dep", ""), key: cm("dep"),
			want: Conflict{Resolution: ConflictAbort, Source: ConflictFromPolicy, Policy: webPolicy}},
		{name: "a dependency followed by Abort and Overwrite workloads is Overwrite",
			objs: conflictWorkload("web", "shared", "") + "---\n" + conflictWorkload("zz", "shared", "") + "---\n" + conflictConfigMap("shared", ""), key: cm("shared"),
			want: Conflict{Resolution: ConflictOverwrite, Source: ConflictFromPolicy, Policy: ovwPolicy}},
		{name: "an object with its own policy keeps it when it also follows", cfg: "  conflictResolution: Abort",
			objs: conflictWorkload("zz", "own", "") + "---\n" + conflictConfigMap("own", ""), key: cm("own"),
			want: Conflict{Resolution: ConflictAbort, Source: ConflictFromPolicy, Policy: cfgPolicy}},
		{name: "an object no policy places is Abort", objs: conflictConfigMap("lonely", ""), key: cm("lonely"),
			want: Conflict{Resolution: ConflictAbort, Source: ConflictFromDefault}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := engine(t, conflictPolicies(tt.web, tt.cfg))
			p, err := e.Place(objects(t, tt.objs), clusterNames("a", "b"))
			require.NoError(t, err)
			op := p.Get(tt.key)
			require.NotNil(t, op)
			assert.Equal(t, tt.want, op.Conflict)
			for _, w := range p.Warnings {
				assert.NotEqual(t, WarnConflictAnnotationInvalid, w.Code, w.Message)
			}
		})
	}
}

func TestPlaceConflictAnnotationInvalid(t *testing.T) {
	// Karmada reads only the lower-case values and ignores the rest; the
	// policy then decides, and the placement says so.
	e := engine(t, conflictPolicies("  conflictResolution: Overwrite", ""))
	p, err := e.Place(objects(t, conflictWorkload("web", "dep", "Abort")), clusterNames("a"))
	require.NoError(t, err)
	op := p.Get(ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"})
	require.NotNil(t, op)
	assert.Equal(t, ConflictOverwrite, op.Conflict.Resolution)
	assert.Equal(t, ConflictFromPolicy, op.Conflict.Source)
	var got []Warning
	for _, w := range p.Warnings {
		if w.Code == WarnConflictAnnotationInvalid {
			got = append(got, w)
		}
	}
	require.Len(t, got, 1)
	assert.Equal(t, "metadata.annotations.work.karmada.io/conflict-resolution", got[0].Path)
	assert.Equal(t, Ref{Kind: KindPropagationPolicy, Namespace: "shop", Name: "web"}, got[0].Policy)
	assert.Contains(t, got[0].Message, `annotation work.karmada.io/conflict-resolution="Abort" is neither "overwrite" nor "abort" and is ignored`)
}

func TestValidateConflictResolution(t *testing.T) {
	for _, tt := range []struct {
		name, value string
		ok          bool
	}{
		{"empty", "", true},
		{"Abort", "Abort", true},
		{"Overwrite", "Overwrite", true},
		{"lower case is not Karmada's spelling", "overwrite", false},
		{"unknown", "Merge", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := ppHead + "spec:\n  conflictResolution: \"" + tt.value + "\"\n  resourceSelectors: [{apiVersion: v1, kind: Service}]\n"
			p, err := Decode([]byte(doc))
			require.NoError(t, err)
			err = p.(*PropagationPolicy).Validate()
			if tt.ok {
				assert.NoError(t, err)
				return
			}
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			assert.True(t, errors.Is(err, ErrInvalid))
			assert.Equal(t, []*FieldError{{Policy: Ref{Kind: KindPropagationPolicy, Namespace: "shop", Name: "web"},
				Path: "spec.conflictResolution", Value: tt.value, Reason: "must be Abort or Overwrite"}}, ve.Problems)
			assert.EqualError(t, err, `PropagationPolicy shop/web is invalid: spec.conflictResolution: must be Abort or Overwrite (value "`+tt.value+`")`)
		})
	}
	// A cluster policy is checked the same way, and the engine refuses it.
	doc := "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterPropagationPolicy\nmetadata: {name: all}\nspec:\n  conflictResolution: Replace\n  resourceSelectors: [{apiVersion: v1, kind: Service}]\n"
	p, err := Decode([]byte(doc))
	require.NoError(t, err)
	var set Set
	require.NoError(t, set.Add(p))
	_, err = NewEngine(set)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `ClusterPropagationPolicy all is invalid: spec.conflictResolution: must be Abort or Overwrite (value "Replace")`)
}
