package postrender

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

const replicas3 = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
`

// object returns the object of kind/name in a manifest stream, decoded.
func object(t *testing.T, manifests, kind, name string) map[string]any {
	t.Helper()
	for _, doc := range strings.Split(manifests, "\n---\n") {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(strings.TrimPrefix(doc, "---\n")), &obj))
		if obj == nil {
			continue
		}
		md, _ := obj["metadata"].(map[string]any)
		if obj["kind"] == kind && md["name"] == name {
			return obj
		}
	}
	t.Fatalf("no %s %s in\n%s", kind, name, manifests)
	return nil
}

// field walks obj along path (map keys, or container names in a list).
func field(obj map[string]any, path ...string) any {
	var cur any = obj
	for _, p := range path {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p]
		case []any:
			var next any
			for _, item := range c {
				if m, ok := item.(map[string]any); ok && m["name"] == p {
					next = m
				}
			}
			cur = next
		default:
			return nil
		}
	}
	return cur
}

func TestKustomizeRun(t *testing.T) {
	tests := []struct {
		name  string
		k     Kustomize
		check func(t *testing.T, out string)
	}{
		{
			name: "strategic merge patch naming its object",
			k:    Kustomize{Patches: []Patch{{Patch: replicas3}}},
			check: func(t *testing.T, out string) {
				assert.EqualValues(t, 3, field(object(t, out, "Deployment", "web"), "spec", "replicas"))
			},
		},
		{
			name: "strategic merge patch with target by kind and labelSelector",
			k: Kustomize{Patches: []Patch{{
				Patch: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ignored-when-targeted
spec:
  template:
    spec:
      containers:
        - name: web
          resources:
            limits:
              memory: 256Mi
`,
				Target: &Selector{Kind: "Deployment", LabelSelector: "tier=frontend"},
			}}},
			check: func(t *testing.T, out string) {
				d := object(t, out, "Deployment", "web")
				containers := field(d, "spec", "template", "spec", "containers")
				assert.Equal(t, "256Mi", field(d, "spec", "template", "spec", "containers", "web", "resources", "limits", "memory"))
				assert.Len(t, containers, 2, "the merge keeps the other container")
				assert.Equal(t, "ghcr.io/example/web:1.4.0", field(d, "spec", "template", "spec", "containers", "web", "image"))
			},
		},
		{
			name: "json6902 patch with target by kind and name",
			k: Kustomize{Patches: []Patch{{
				Patch:  "- op: replace\n  path: /spec/type\n  value: NodePort\n",
				Target: &Selector{Kind: "Service", Name: "web"},
			}}},
			check: func(t *testing.T, out string) {
				assert.Equal(t, "NodePort", field(object(t, out, "Service", "web"), "spec", "type"))
			},
		},
		{
			name: "json6902 patch with target by labelSelector hits every matching object",
			k: Kustomize{Patches: []Patch{{
				Patch:  "- op: add\n  path: /metadata/labels/team\n  value: storefront\n",
				Target: &Selector{LabelSelector: "app.kubernetes.io/name=web"},
			}}},
			check: func(t *testing.T, out string) {
				for _, kind := range []string{"ConfigMap", "Service", "Deployment"} {
					name := "web"
					if kind == "ConfigMap" {
						name = "web-config"
					}
					assert.Equal(t, "storefront", field(object(t, out, kind, name), "metadata", "labels", "team"), kind)
				}
			},
		},
		{
			name: "target kind and name are anchored regular expressions",
			k: Kustomize{Patches: []Patch{{
				Patch:  "- op: add\n  path: /metadata/annotations\n  value: {picked: \"yes\"}\n",
				Target: &Selector{Kind: "ConfigMap|Service", Name: "web.*"},
			}}},
			check: func(t *testing.T, out string) {
				assert.Equal(t, "yes", field(object(t, out, "ConfigMap", "web-config"), "metadata", "annotations", "picked"))
				assert.Equal(t, "yes", field(object(t, out, "Service", "web"), "metadata", "annotations", "picked"))
				assert.Nil(t, field(object(t, out, "Deployment", "web"), "metadata", "annotations"))
			},
		},
		{
			name: "images newTag and digest",
			k: Kustomize{Images: []Image{
				{Name: "ghcr.io/example/web", NewTag: "1.5.0"},
				{Name: "docker.io/library/nginx", NewName: "registry.internal/nginx", Digest: "sha256:" + strings.Repeat("ab", 32)},
			}},
			check: func(t *testing.T, out string) {
				d := object(t, out, "Deployment", "web")
				assert.Equal(t, "ghcr.io/example/web:1.5.0", field(d, "spec", "template", "spec", "containers", "web", "image"))
				assert.Equal(t, "registry.internal/nginx@sha256:"+strings.Repeat("ab", 32), field(d, "spec", "template", "spec", "containers", "proxy", "image"))
			},
		},
		{
			name: "patches apply in order, images after patches",
			k: Kustomize{
				Patches: []Patch{
					{Patch: replicas3},
					{
						// Passes only if the patch before ran first.
						Patch:  "- op: test\n  path: /spec/replicas\n  value: 3\n- op: replace\n  path: /spec/replicas\n  value: 5\n",
						Target: &Selector{Kind: "Deployment"},
					},
					{
						Patch:  "- op: replace\n  path: /spec/template/spec/containers/0/image\n  value: ghcr.io/example/web:2.0.0\n",
						Target: &Selector{Kind: "Deployment"},
					},
				},
				Images: []Image{{Name: "ghcr.io/example/web", NewTag: "2.0.1"}},
			},
			check: func(t *testing.T, out string) {
				d := object(t, out, "Deployment", "web")
				assert.EqualValues(t, 5, field(d, "spec", "replicas"))
				assert.Equal(t, "ghcr.io/example/web:2.0.1", field(d, "spec", "template", "spec", "containers", "web", "image"))
			},
		},
		{
			name: "strategic merge delete removes an object",
			k:    Kustomize{Patches: []Patch{{Patch: "$patch: delete\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\n"}}},
			check: func(t *testing.T, out string) {
				assert.NotContains(t, out, "kind: ConfigMap")
				assert.Contains(t, out, "kind: Service")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.k.Run(rendered(t))
			require.NoError(t, err)
			tt.check(t, out.String())
			golden(t, "kustomize/"+tt.name, out.String())

			again, err := tt.k.Run(rendered(t))
			require.NoError(t, err)
			assert.Equal(t, out.String(), again.String(), "output is deterministic")
		})
	}
}

func TestKustomizeRunKeepsOrderAndSourceLines(t *testing.T) {
	k := Kustomize{Images: []Image{{Name: "ghcr.io/example/web", NewTag: "1.5.0"}}}
	out, err := k.Run(rendered(t))
	require.NoError(t, err)
	docs := strings.Split(out.String(), "---\n")[1:]
	require.Len(t, docs, 3)
	for i, want := range []struct{ source, kind string }{
		{"web/templates/configmap.yaml", "ConfigMap"},
		{"web/templates/service.yaml", "Service"},
		{"web/templates/deployment.yaml", "Deployment"},
	} {
		assert.True(t, strings.HasPrefix(docs[i], "# Source: "+want.source+"\n"), "document %d: %q", i, docs[i])
		assert.Contains(t, docs[i], "\nkind: "+want.kind+"\n")
	}
}

func TestKustomizeRunRenamedObjectLosesOnlyItsSourceLine(t *testing.T) {
	k := Kustomize{Patches: []Patch{{
		Patch:  "- op: replace\n  path: /metadata/name\n  value: web-v2\n",
		Target: &Selector{Kind: "Service"},
	}}}
	out, err := k.Run(rendered(t))
	require.NoError(t, err)
	assert.Contains(t, out.String(), "---\napiVersion: v1\nkind: Service\n")
	assert.Contains(t, out.String(), "# Source: web/templates/deployment.yaml\n")
	assert.Equal(t, "web-v2", field(object(t, out.String(), "Service", "web-v2"), "metadata", "name"))
}

func TestKustomizeRunEdgeInputs(t *testing.T) {
	k := Kustomize{Images: []Image{{Name: "nginx", NewTag: "2"}}}
	tests := []struct {
		name, in, want string
	}{
		{name: "empty", in: "", want: ""},
		{name: "comment-only document", in: "---\n# Source: c/templates/empty.yaml\n# nothing\n", want: ""},
		{
			name: "List is unwrapped and items keep the Source line",
			in:   "---\n# Source: c/templates/list.yaml\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec: {containers: [{name: c, image: nginx:1}]}\n",
			want: "---\n# Source: c/templates/list.yaml\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - image: nginx:2\n    name: c\n",
		},
		{
			name: "document without Source line",
			in:   "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: nginx}]}\n",
			want: "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - image: nginx:2\n    name: c\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := k.Run(bytes.NewBufferString(tt.in))
			require.NoError(t, err)
			assert.Equal(t, tt.want, out.String())
		})
	}
}

func TestKustomizeEmptyIsIdentity(t *testing.T) {
	in := rendered(t)
	out, err := Kustomize{}.Run(in)
	require.NoError(t, err)
	assert.Same(t, in, out)
}

func TestKustomizeRunErrors(t *testing.T) {
	tests := []struct {
		name     string
		in       string // "" means testdata/rendered.yaml
		k        Kustomize
		path     string
		target   *Selector
		contains string
	}{
		{
			name: "bad patch YAML names the patch index",
			k: Kustomize{Patches: []Patch{
				{Patch: replicas3},
				{Patch: "spec: [replicas: 2\n", Target: &Selector{Kind: "Deployment"}},
			}},
			path:     "kustomize.patches[1]",
			target:   &Selector{Kind: "Deployment"},
			contains: "patch is not valid YAML",
		},
		{
			name: "json6902 remove of a missing path",
			k: Kustomize{Patches: []Patch{{
				Patch:  "- op: remove\n  path: /spec/strategy\n",
				Target: &Selector{Kind: "Deployment", Name: "web"},
			}}},
			path:     "kustomize.patches[0]",
			target:   &Selector{Kind: "Deployment", Name: "web"},
			contains: "Unable to remove nonexistent key",
		},
		{
			name: "json6902 test that fails because of patch order",
			k: Kustomize{Patches: []Patch{
				{Patch: "- op: test\n  path: /spec/replicas\n  value: 3\n", Target: &Selector{Kind: "Deployment"}},
				{Patch: replicas3},
			}},
			path:     "kustomize.patches[0]",
			target:   &Selector{Kind: "Deployment"},
			contains: "test failed",
		},
		{
			name:     "strategic merge patch naming a missing object",
			k:        Kustomize{Patches: []Patch{{Patch: replicas3}, {Patch: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: nope\n"}}},
			path:     "kustomize.patches[1]",
			contains: "no resource matches strategic merge patch",
		},
		{
			name:     "json6902 patch without target",
			k:        Kustomize{Patches: []Patch{{Patch: "- op: add\n  path: /metadata/labels/a\n  value: b\n"}}},
			path:     "kustomize.patches[0]",
			contains: "must specify a target for JSON patch",
		},
		{
			name:     "bad label selector",
			k:        Kustomize{Patches: []Patch{{Patch: "- op: add\n  path: /metadata/labels/a\n  value: b\n", Target: &Selector{LabelSelector: "app in (web"}}}},
			path:     "kustomize.patches[0]",
			target:   &Selector{LabelSelector: "app in (web"},
			contains: "unable to parse requirement",
		},
		{
			name:     "manifests that kustomize cannot read",
			in:       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
			k:        Kustomize{Images: []Image{{Name: "nginx", NewTag: "2"}}},
			path:     "kustomize",
			contains: "already registered id",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := rendered(t)
			if tt.in != "" {
				in = bytes.NewBufferString(tt.in)
			}
			out, err := tt.k.Run(in)
			require.Error(t, err)
			assert.Nil(t, out)
			var e *Error
			require.True(t, errors.As(err, &e), "%T: %v", err, err)
			assert.Equal(t, tt.path, e.Path)
			assert.Equal(t, tt.target, e.Target)
			assert.Contains(t, err.Error(), tt.contains)
			assert.True(t, strings.HasPrefix(err.Error(), tt.path), err.Error())
			if tt.target != nil {
				assert.Contains(t, err.Error(), "(target "+tt.target.String()+")")
			}
		})
	}
}

func TestKustomizeValidate(t *testing.T) {
	tests := []struct {
		name     string
		k        Kustomize
		path     string // "" means valid
		contains string
	}{
		{name: "valid", k: Kustomize{
			Patches: []Patch{{Patch: replicas3}, {Patch: "- op: add\n  path: /a\n  value: b\n", Target: &Selector{Kind: "Deployment|StatefulSet"}}},
			Images:  []Image{{Name: "nginx", NewTag: "1"}},
		}},
		{name: "empty patch", k: Kustomize{Patches: []Patch{{Patch: "  "}}}, path: "kustomize.patches[0]", contains: "patch is not valid YAML|must specify one of patch and path"},
		{name: "YAML error", k: Kustomize{Patches: []Patch{{Patch: replicas3}, {Patch: "a: [b\n"}}}, path: "kustomize.patches[1]", contains: "patch is not valid YAML"},
		{name: "scalar patch", k: Kustomize{Patches: []Patch{{Patch: "42"}}}, path: "kustomize.patches[0]", contains: "unable to parse SM or JSON patch"},
		{name: "json6902 without target", k: Kustomize{Patches: []Patch{{Patch: "- op: remove\n  path: /a\n"}}}, path: "kustomize.patches[0]", contains: "needs a target"},
		{name: "bad regex", k: Kustomize{Patches: []Patch{{Patch: replicas3, Target: &Selector{Name: "web["}}}}, path: "kustomize.patches[0]", contains: "missing closing ]"},
		{name: "bad annotation selector", k: Kustomize{Patches: []Patch{{Patch: replicas3, Target: &Selector{AnnotationSelector: "a=(b"}}}}, path: "kustomize.patches[0]", contains: "annotationSelector"},
		{name: "image without name", k: Kustomize{Images: []Image{{Name: "a", NewTag: "1"}, {NewTag: "2"}}}, path: "kustomize.images[1].name", contains: "is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.k.Validate()
			if tt.path == "" {
				require.NoError(t, err)
				return
			}
			var e *Error
			require.True(t, errors.As(err, &e), "%T: %v", err, err)
			assert.Equal(t, tt.path, e.Path)
			assert.Regexp(t, tt.contains, err.Error())
		})
	}
}

func TestErrorMessage(t *testing.T) {
	cause := errors.New("boom")
	e := &Error{
		Path:   "postRenderers[0].kustomize.patches[1]",
		Target: &Selector{Kind: "Deployment", Name: "web", LabelSelector: "a=b"},
		Value:  strings.Repeat("x", 100),
		Err:    cause,
	}
	assert.Equal(t, `postRenderers[0].kustomize.patches[1] (target kind=Deployment,name=web,labelSelector=a=b) "`+strings.Repeat("x", 80)+`...": boom`, e.Error())
	assert.ErrorIs(t, e, cause)
	assert.Equal(t, "all objects", Selector{}.String())
}

// Kustomize keeps global state (its OpenAPI schema); runs on many
// goroutines at once must be safe (go test -race).
func TestKustomizeRunConcurrently(t *testing.T) {
	k := Kustomize{
		Patches: []Patch{{Patch: replicas3}, {Patch: "- op: replace\n  path: /spec/type\n  value: NodePort\n", Target: &Selector{Kind: "Service"}}},
		Images:  []Image{{Name: "ghcr.io/example/web", NewTag: "1.5.0"}},
	}
	want, err := k.Run(rendered(t))
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := k.Run(rendered(t))
			if err == nil && out.String() != want.String() {
				err = fmt.Errorf("goroutine %d: different output", i)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err)
	}
}
