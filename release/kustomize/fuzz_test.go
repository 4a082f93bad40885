package kustomize_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
)

// FuzzBuild: whatever the kustomization and the resource file say, Build
// returns a result or a typed error, and never panics.
func FuzzBuild(f *testing.F) {
	f.Add(kustomization("resources: [r.yaml]\n"), helmRelease)
	f.Add(kustomization("resources: [../k, r.yaml]\nnamespace: x\n"), helmRelease)
	f.Add(kustomization("patches:\n  - path: r.yaml\nresources: [r.yaml]\n"), helmRelease)
	f.Add(kustomization("secretGenerator:\n  - name: s\n    files: [a=r.yaml]\n"), "x")
	f.Add(kustomization("components: [.]\n"), "")
	f.Add("generators:\n  - |\n    apiVersion: builtin\n    kind: ConfigMapGenerator\n    metadata: {name: x}\n", "")
	f.Add(kustomization("resources: [r.yaml]\npatchesStrategicMerge: [r.yaml]\n"), "apiVersion: v1\nkind: List\nitems: []\n")
	f.Fuzz(func(t *testing.T, k, r string) {
		fsys := tree(map[string]string{"k/kustomization.yaml": k, "k/r.yaml": r})
		res, err := kustomize.Build(t.Context(), fsys, "k", kustomize.Options{MaxKustomizations: 50, MaxDepth: 8})
		if err == nil {
			if res == nil || res.Objects == nil {
				t.Fatal("no error and no result")
			}
			return
		}
		var (
			ee *kustomize.EntryError
			be *kustomize.BuildError
			de *kustomize.DecodeError
			we *release.WithheldError
		)
		// kustomize's own error about a secretGenerator may quote the
		// Secret's data: it is withheld, naming the kustomization.
		if !errors.As(err, &ee) && !errors.As(err, &be) && !errors.As(err, &de) && !errors.As(err, &we) {
			t.Fatalf("untyped error %T: %v", err, err)
		}
		if we != nil && !strings.Contains(err.Error(), "kustomization k") {
			t.Fatalf("withheld error names no kustomization: %v", err)
		}
		if ee != nil && ee.File == "" {
			t.Fatalf("entry error names no file: %v", err)
		}
	})
}
