package kustomize

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/values"
)

// marked substitutes text (one object) with the Secret variables secret
// and the other variables plain, and returns the object and the hider of
// its marks.
func marked(t testing.TB, text string, secret, plain map[string]string) (*unstructured.Unstructured, *hider) {
	t.Helper()
	vars := &Variables{Values: map[string]string{}, secretVars: map[string]bool{}}
	marks := &secretMarks{objects: map[string]*leaves{}, values: map[string]bool{}}
	for k, v := range plain {
		vars.Values[k] = v
	}
	for k, v := range secret {
		vars.Values[k], vars.secretVars[k] = v, true
		if v != "" {
			marks.values[v] = true
		}
	}
	lookup := func(name string) (string, bool) { v, ok := vars.Values[name]; return v, ok }
	real := treeOf(text, lookup)
	require.NotNil(t, real, "the object substitutes and reads")
	a, b := placeholders(vars.secretVars, lookup)
	o := &unstructured.Unstructured{Object: real.(map[string]any)}
	if n := secretLeaves(real, treeOf(text, a), treeOf(text, b)); n != nil {
		marks.objects[objectKey(o.GroupVersionKind().Group, o.GetKind(), o.GetNamespace(), o.GetName())] = n
	}
	return o, newHider(marks)
}

func object(t testing.TB, text string) *unstructured.Unstructured {
	t.Helper()
	o := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(text), &o.Object))
	return o
}

const (
	head = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: apps}\n"
	meta = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: apps\n"
)

// TestSecretLeaves: every way a Secret variable's value reaches an
// object is masked on both sides of a diff, and what did not come from a
// Secret is shown.
func TestSecretLeaves(t *testing.T) {
	const cur = "curSECRETvalue"
	for _, tc := range []struct {
		name     string
		template string // the object, with ${S}
		live     string // the live object, with the old value
		want     []string
	}{{
		name:     "length, case, replace, pattern",
		template: head + "data:\n  len: '${#S}'\n  lower: ${S,,}\n  upper: ${S^^}\n  repl: ${S/SECRET/x}\n  trim: ${S#old}\n  lit: ok\n",
		live:     head + "data:\n  len: '14'\n  lower: oldsecretvalue\n  upper: OLDSECRETVALUE\n  repl: oldxvalue\n  trim: SECRETvalue\n  lit: ok\n",
		want:     []string{" len: (secret value)", "-  lower: (secret value, old)", "+  lower: (secret value, new)", "+  trim: (secret value, new)", " lit: ok"},
	}, {
		name:     "a number",
		template: head + "spec:\n  port: ${P}\n",
		live:     head + "spec:\n  port: 8443\n",
		want:     []string{"-  port: (secret value, old)", "+  port: (secret value, new)"},
	}, {
		name:     "the shape of a list",
		template: head + "spec:\n  args: [${L}, --verbose]\n",
		live:     head + "spec:\n  args: [x, oldSECRETvalue, --verbose]\n",
		want:     []string{"-  args: (secret value, old)", "+  args: (secret value, new)"},
	}, {
		name:     "an element found by name after the list changed",
		template: head + "spec:\n  env:\n  - {name: A, value: a}\n  - {name: B, value: b}\n  - {name: TOKEN, value: '${S}'}\n",
		live:     head + "spec:\n  env:\n  - {name: A, value: a}\n  - {name: TOKEN, value: oldSECRETvalue}\n",
		want:     []string{"-    value: (secret value, old)", "+    value: (secret value, new)", "+  - name: B"},
	}, {
		name:     "a value the manifest moved",
		template: head + "data:\n  b: ${S}\n",
		live:     head + "data:\n  a: curSECRETvalue\n",
		want:     []string{"-  a: (secret value)", "+  b: (secret value)"},
	}, {
		name:     "a key",
		template: head + "data:\n  ${S}: v\n  lit: ok\n",
		live:     head + "data:\n  oldSECRETvalue: v\n  lit: ok\n  other: x\n",
		want:     []string{"(secret key 1): (secret value)", "(secret key 2): (secret value)", "(secret key 3): (secret value)", " lit: ok"},
	}, {
		name:     "an object that reads only with the Secret's value",
		template: head + "data:\n  a: '${Q}\n  b: ok\n",
		live:     head + "data:\n  a: oldSECRETvalue\n  b: ok\n",
		want:     []string{"-content: (secret value, old)", "+content: (secret value, new)", " kind: ConfigMap", " name: c"},
	}, {
		name:     "kubectl's last-applied copy",
		template: meta + "data:\n  a: ${S}\n",
		live:     meta + "  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: '{\"data\":{\"a\":\"oldSECRETvalue-and-more\"}}'\ndata:\n  a: oldSECRETvalue\n",
		want:     []string{"last-applied-configuration: (secret value)"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			built, h := marked(t, tc.template, map[string]string{"S": cur, "P": "8080", "L": "x, " + cur, "Q": cur + "'"}, nil)
			live := object(t, tc.live)
			kept := built.DeepCopy()
			before, after, err := h.pair(live, built, built)
			require.NoError(t, err)
			diff := diffLines(before, after)
			for _, s := range []string{"SECRET", "secret" + "value", "8080", "8443", "14"} {
				assert.NotContains(t, diff, s)
			}
			for _, w := range tc.want {
				assert.Contains(t, diff, w)
			}
			assert.Equal(t, kept, built, "what is applied keeps its values")
		})
	}
}

// diffLines is a crude diff for the test: live lines prefixed "-",
// built lines "+", lines on both " ".
func diffLines(before, after string) string {
	in := map[string]int{}
	for l := range strings.Lines(after) {
		in[l]++
	}
	var b strings.Builder
	for l := range strings.Lines(before) {
		if in[l] > 0 {
			in[l]--
			b.WriteString(" " + l)
			continue
		}
		b.WriteString("-" + l)
	}
	bl := map[string]int{}
	for l := range strings.Lines(before) {
		bl[l]++
	}
	for l := range strings.Lines(after) {
		if bl[l] > 0 {
			bl[l]--
			continue
		}
		b.WriteString("+" + l)
	}
	return b.String()
}

// TestSecretVariablesOverridden: a Secret's variable that a later
// ConfigMap or spec.postBuild.substitute sets is no longer a Secret's.
func TestSecretVariablesOverridden(t *testing.T) {
	reader := mapReader{"Secret/s": {"A": []byte("1"), "B": []byte("2"), "C": []byte("3")}, "ConfigMap/c": {"B": []byte("two")}}
	k := &release.Kustomization{}
	k.Namespace, k.Name = "apps", "app"
	k.Spec.PostBuild = &release.PostBuild{
		SubstituteFrom: []release.SubstituteReference{{Kind: "Secret", Name: "s"}, {Kind: "ConfigMap", Name: "c"}},
		Substitute:     map[string]string{"C": "three"},
	}
	vars, err := LoadVariables(t.Context(), reader, k)
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"A": true}, vars.secretVars)
}

// mapReader is a values.Reader over ConfigMaps and Secrets by kind/name.
type mapReader map[string]map[string][]byte

func (m mapReader) Read(_ context.Context, kind values.Kind, _, name string) (map[string][]byte, error) {
	d, ok := m[string(kind)+"/"+name]
	if !ok {
		return nil, values.ErrNotFound
	}
	return d, nil
}

// FuzzSecretLeaves: whatever the object's text and the Secret's value,
// the tracker does not panic, leaves the built object as it is, and the
// plan's text of a new object holds the value only where the text would
// hold it with a placeholder in its place (the value is in the source
// text or in a marker).
func FuzzSecretLeaves(f *testing.F) {
	f.Add("data:\n  a: ${S}\n", "hunter2-secret")
	f.Add("data:\n  a: ${S:9:10}\n  b: x${S,,}y\n", "oldCANRY\tq7Z9wX4kP2 mN8vR5tY3u")
	f.Add("data:\n  ${S:0:4}-k: v\n", "keyish-secret")
	f.Add("spec:\n  args: [${S}, --verbose]\n", "a, b, c")
	f.Add("spec:\n  m: {${S}}\n", "x: y, z: w")
	f.Add("data:\n  a: '${#S}'\n  b: ${S:=d}\n", "")
	f.Add("spec:\n  port: ${S}\n", "8080")
	f.Add("data:\n  folded: >-\n    long long long long long long long long long long long long ${S} tail\n", "with space")
	f.Fuzz(func(t *testing.T, body, secret string) {
		text := head + body
		vars := map[string]string{"S": strings.ReplaceAll(secret, "\n", "")}
		lookup := func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
		real := treeOf(text, lookup)
		m, ok := real.(map[string]any)
		if !ok {
			return // not an object: substitution's errors are tested elsewhere
		}
		a, b := placeholders(map[string]bool{"S": true}, lookup)
		n := secretLeaves(real, treeOf(text, a), treeOf(text, b))
		built := &unstructured.Unstructured{Object: m}
		kept := built.DeepCopy()
		marks := &secretMarks{objects: map[string]*leaves{}, values: map[string]bool{vars["S"]: vars["S"] != ""}}
		if n != nil {
			marks.objects[objectKey(built.GroupVersionKind().Group, built.GetKind(), built.GetNamespace(), built.GetName())] = n
		}
		_, out, err := newHider(marks).pair(nil, built, built)
		if err != nil {
			return
		}
		if !assert.Equal(t, kept, built) {
			return
		}
		s := vars["S"]
		pa, err := yaml.Marshal(treeOf(text, a))
		if len(s) < 4 || err != nil || strings.Contains(text, s) || strings.Contains(string(pa), s) ||
			strings.Contains(secretOld+secretNew+"(secret key 0123456789)", s) {
			return
		}
		if strings.Contains(out, s) {
			t.Fatalf("the plan's text holds the Secret's value %q:\n%s", s, out)
		}
	})
}
