package postrender

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzKustomizeRun feeds arbitrary manifests, patches and targets to the
// kustomize post-renderer followed by common metadata: it must never
// panic, every error must be an *Error naming the patch, and a success
// must be deterministic and readable again.
func FuzzKustomizeRun(f *testing.F) {
	deploy := "---\n# Source: c/templates/d.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n      - name: web\n        image: nginx:1\n"
	f.Add(deploy, replicas3, "")
	f.Add(deploy, "- op: replace\n  path: /spec/replicas\n  value: 2\n", "Deployment")
	f.Add(deploy, "- op: remove\n  path: /spec/nope\n", "Deploy.*")
	f.Add(deploy, "$patch: delete\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n", "")
	f.Add(deploy, "a: [", "")
	f.Add(deploy, "- op: move\n  from: /spec\n  path: /spec/x\n", "Deployment")
	f.Add(deploy, "spec:\n  template: 5\n", "Deployment")
	f.Add("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n", "- op: add\n  path: /data\n  value: {a: &x b, c: *x}\n", "ConfigMap")
	f.Add("kind: [\n", "metadata: {name: x}\n", "(")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, manifests, patch, kind string) {
		p := Patch{Patch: patch}
		if kind != "" {
			p.Target = &Selector{Kind: kind}
		}
		pr, err := Build([]Kustomize{{Patches: []Patch{p}, Images: []Image{{Name: "nginx", NewTag: "2"}}}},
			&CommonMetadata{Labels: map[string]string{"env": "prod"}})
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		out, err := pr.Run(bytes.NewBufferString(manifests))
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		again, err := pr.Run(bytes.NewBufferString(manifests))
		if err != nil || again.String() != out.String() {
			t.Fatalf("second run differs: %v\n%s\n---\n%s", err, out, again)
		}
		if _, err := (CommonMetadata{Labels: map[string]string{"x": "y"}}).Run(out); err != nil {
			t.Fatalf("output does not read back: %v\n%s", err, out)
		}
	})
}

func checkFuzzError(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%T is not *Error: %v", err, err)
	}
	if !strings.HasPrefix(e.Path, "postRenderers[0].kustomize") && e.Path != "commonMetadata" {
		t.Fatalf("unexpected path %q: %v", e.Path, err)
	}
	if strings.Contains(err.Error(), "panicked") {
		t.Logf("kustomize panicked, recovered: %v", err)
	}
}
