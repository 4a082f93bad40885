package fleettest

import (
	"context"
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/release"
)

// History is `helm history name -n namespace` on a cluster: the Helm
// release records of name stored in namespace, oldest first; none (and
// no error) when there is no such release.
func History(ctx context.Context, c release.HelmConfigurer, namespace, name string) ([]*helmrelease.Release, error) {
	cfg, err := c.HelmConfig(ctx, release.HelmScope{StorageNamespace: namespace, Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("fleettest: history of %s/%s: %w", namespace, name, err)
	}
	hs, err := action.NewHistory(cfg).Run(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fleettest: history of %s/%s: %w", namespace, name, err)
	}
	return hs, nil
}

// Revisions summarizes History as "<chart version> <status>" per
// revision, oldest first (e.g. "6.5.0 superseded", "6.5.1 deployed"):
// what a test of a rollout usually compares.
func Revisions(ctx context.Context, c release.HelmConfigurer, namespace, name string) ([]string, error) {
	hs, err := History(ctx, c, namespace, name)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, h := range hs {
		v := ""
		if h.Chart != nil && h.Chart.Metadata != nil {
			v = h.Chart.Metadata.Version
		}
		st := ""
		if h.Info != nil {
			st = h.Info.Status.String()
		}
		out = append(out, v+" "+st)
	}
	return out, nil
}

// Object returns the live object of apiVersion ("apps/v1", "v1") and kind
// called namespace/name ("" namespace for a cluster-scoped one) on a
// cluster. A missing object is an error matching release.ErrNotFound.
func Object(ctx context.Context, c release.ObjectReader, apiVersion, kind, namespace, name string) (*unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("fleettest: apiVersion %q: %w", apiVersion, err)
	}
	return c.Get(ctx, release.ObjectRef{GroupVersionKind: gv.WithKind(kind), Namespace: namespace, Name: name})
}
