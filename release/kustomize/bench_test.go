package kustomize_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
)

// layoutDirs are the kustomizations of the Flux-layout tree (fleet) Flux
// would build.
var layoutDirs = []string{"clusters/dev", "clusters/prod", "infrastructure/crds", "infrastructure/dev", "infrastructure/prod", "apps/dev", "apps/prod"}

// BenchmarkBuild builds every kustomization of the Flux-layout tree: Build
// from an in-memory fs.FS (walk, copy, krusty, decode) against krusty's
// own Run over kyaml's in-memory file system holding the same tree, with
// the same options (the baseline does not decode). helmfleet-origins
// also records each object's file (Options.Origins).
//
// kustomize prints deprecation warnings to standard error, into the
// benchmark's output; run the compiled test binary with 2>/dev/null for
// clean lines.
func BenchmarkBuild(b *testing.B) {
	tree := mapFS(b, fleet)
	b.Run("helmfleet", func(b *testing.B) {
		for b.Loop() {
			for _, dir := range layoutDirs {
				if _, err := kustomize.Build(b.Context(), tree, dir, kustomize.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("helmfleet-origins", func(b *testing.B) {
		for b.Loop() {
			for _, dir := range layoutDirs {
				if _, err := kustomize.Build(b.Context(), tree, dir, kustomize.Options{Origins: true}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("krusty", func(b *testing.B) {
		mem := filesys.MakeFsInMemory()
		for p, f := range tree {
			if err := mem.WriteFile("/"+p, f.Data); err != nil {
				b.Fatal(err)
			}
		}
		k := krusty.MakeKustomizer(krustyOptions(kustomize.Options{}))
		for b.Loop() {
			for _, dir := range layoutDirs {
				if _, err := k.Run(mem, "/"+dir); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkReconcilerBuild builds every kustomization of the Flux-layout
// tree as Flux Kustomizations (Reconciler.Build), against Build over the
// same in-memory tree as the baseline: "plain" without spec settings,
// "transformed" with targetNamespace, namePrefix and an image (the top
// kustomization file rewritten), "substituted" with postBuild variables
// (every object's YAML substituted and read back).
func BenchmarkReconcilerBuild(b *testing.B) {
	tree := mapFS(b, fleet)
	r, err := kustomize.NewReconciler(kustomize.ReconcilerConfig{
		Sources: kustomize.MapSources{"GitRepository/flux-system/fleet": {FS: tree, Revision: "main@sha1:1"}},
		Build:   kustomize.Options{LoadRestrictions: kustypes.LoadRestrictionsRootOnly, Reorder: krusty.ReorderOptionLegacy},
	})
	if err != nil {
		b.Fatal(err)
	}
	kustomization := func(dir string, mutate func(*release.Kustomization)) *release.Kustomization {
		k := &release.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "flux-system"},
			Spec: release.KustomizationSpec{
				Interval: metav1.Duration{Duration: time.Minute}, Path: dir,
				SourceRef: release.KustomizationSourceReference{Kind: "GitRepository", Name: "fleet"},
			},
		}
		if mutate != nil {
			mutate(k)
		}
		k.Default()
		return k
	}
	b.Run("Build", func(b *testing.B) {
		for b.Loop() {
			for _, dir := range layoutDirs {
				if _, err := kustomize.Build(b.Context(), tree, dir, kustomize.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	for _, v := range []struct {
		name   string
		mutate func(*release.Kustomization)
	}{
		{"plain", nil},
		{"transformed", func(k *release.Kustomization) {
			k.Spec.TargetNamespace, k.Spec.NamePrefix = "bench", "b-"
			k.Spec.Images = []release.Image{{Name: "nginx", NewTag: "1.27"}}
		}},
		{"substituted", func(k *release.Kustomization) {
			k.Spec.PostBuild = &release.PostBuild{Substitute: map[string]string{"cluster": "dev", "region": "eu"}}
		}},
	} {
		ks := make([]*release.Kustomization, len(layoutDirs))
		for i, dir := range layoutDirs {
			ks[i] = kustomization(dir, v.mutate)
		}
		b.Run("Reconciler-"+v.name, func(b *testing.B) {
			for b.Loop() {
				for _, k := range ks {
					if _, err := r.Build(b.Context(), k); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
