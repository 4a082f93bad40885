package fleet

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/release"
)

// TestKustomizer is a stand-in for kustomize.Reconciler in tests.
type TestKustomizer interface {
	Plan(ctx context.Context, c release.ObjectClient, k *release.Kustomization) (revision string, objects []*unstructured.Unstructured, diff string, prune []string, produced *release.Objects, err error)
	Reconcile(ctx context.Context, c release.ObjectClient, k *release.Kustomization) error
	Delete(ctx context.Context, c release.ObjectClient, k *release.Kustomization) error
}

// SetKustomizer makes f run Kustomizations with k.
func SetKustomizer(f *Fleet, k TestKustomizer) { f.kust = testKustomizer{k} }

type testKustomizer struct{ k TestKustomizer }

func (t testKustomizer) plan(ctx context.Context, c release.ObjectClient, k *release.Kustomization) (*kustomizePlan, error) {
	rev, objs, diff, prune, produced, err := t.k.Plan(ctx, c, k)
	if err != nil {
		return nil, err
	}
	return &kustomizePlan{revision: rev, objects: objs, diff: diff, prune: prune, produced: produced}, nil
}

func (t testKustomizer) reconcile(ctx context.Context, c release.ObjectClient, k *release.Kustomization) error {
	return t.k.Reconcile(ctx, c, k)
}

func (t testKustomizer) delete(ctx context.Context, c release.ObjectClient, k *release.Kustomization) error {
	return t.k.Delete(ctx, c, k)
}
