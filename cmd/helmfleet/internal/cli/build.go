package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// objectGetter reads an object of a member.
type objectGetter interface {
	Get(ctx context.Context, ref release.ObjectRef) (*unstructured.Unstructured, error)
}

// writeBuild writes, per member (only member when not empty), every
// unit of p with its objects as YAML: a Kustomization's as applied to
// the member, a release's as rendered; Secret values masked. A unit
// that failed is written as "# error: …" in its place, and then, once
// everything is written, the build fails: an exit status of ExitError.
func writeBuild(ctx context.Context, w io.Writer, p *fleet.Plan, clusters map[string]objectGetter, names []string, member string) error {
	failed := 0
	for _, name := range names {
		if member != "" && name != member {
			continue
		}
		fmt.Fprintf(w, "# member %s\n", name)
		for _, kp := range p.Kustomizations {
			if kp.Cluster != name {
				continue
			}
			fmt.Fprintf(w, "# Kustomization %s/%s (%s, revision %s)\n", kp.Kustomization.Namespace, kp.Kustomization.Name, kp.Kustomization.Spec.Path, kp.Revision)
			if kp.Err != nil {
				failed++
				fmt.Fprintf(w, "# error: %s\n", oneLine(kp.Err.Error()))
			}
			// Values substituted from Secrets are masked wherever they
			// landed, as the Kustomization's own plan masks them.
			secrets, err := secretVariables(ctx, clusters[name], kp.Kustomization)
			if err != nil {
				return fmt.Errorf("member %s: %w", name, err)
			}
			for _, o := range kp.Objects {
				if o.Action == kustomize.PlanSkip {
					continue
				}
				u, err := clusters[name].Get(ctx, o.Object)
				if errors.Is(err, release.ErrNotFound) {
					fmt.Fprintf(w, "# %s/%s/%s: not applied\n", o.Object.Kind, o.Object.Namespace, o.Object.Name)
					continue
				}
				if err != nil {
					return fmt.Errorf("member %s: %s/%s/%s: %w", name, o.Object.Kind, o.Object.Namespace, o.Object.Name, err)
				}
				// A plan of the object alone masks it as a release's
				// objects are masked: Secret data replaced by digests.
				obj := stored(u)
				maskSecretValues(obj, secrets)
				if err := writeObjects(w, reconcile.Plan{Objects: []*unstructured.Unstructured{obj}}); err != nil {
					return err
				}
			}
		}
		for _, it := range p.Items {
			if it.Cluster != name {
				continue
			}
			chart := "-"
			if it.Chart != "" {
				chart = it.Chart + "@" + it.Version
			}
			fmt.Fprintf(w, "# HelmRelease %s/%s (%s, Kubernetes %s)\n", it.Release.Namespace, it.Release.Name, chart, it.KubeVersion)
			if it.Err != nil {
				failed++
				fmt.Fprintf(w, "# error: %s\n", oneLine(it.Err.Error()))
			}
			if err := writeObjects(w, *it); err != nil {
				return err
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d unit(s) failed to build (\"# error:\" in the output)", failed)
	}
	return nil
}

// writeObjects writes p's objects as YAML documents, masked as
// reconcile.Plan.MaskedObjects masks them: Secret data, and the values a
// release took from Secrets wherever they were rendered.
func writeObjects(w io.Writer, p reconcile.Plan) error {
	for _, o := range p.MaskedObjects() {
		data, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", data); err != nil {
			return err
		}
	}
	return nil
}

// stored returns u without the server's bookkeeping and status.
func stored(u *unstructured.Unstructured) *unstructured.Unstructured {
	c := u.DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	delete(c.Object, "status")
	return c
}
