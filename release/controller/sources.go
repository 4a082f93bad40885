package controller

import (
	"bytes"
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/source"
)

// sourceCharts is a release.ChartGetter that reads the source objects a
// release names from the cluster and resolves its chart through
// release.Charts with them.
type sourceCharts struct {
	reader   client.Reader
	resolver source.Resolver
}

func (s *sourceCharts) GetChart(ctx context.Context, rel *release.Release) (*release.Chart, error) {
	ns := func(n string) string {
		if n == "" {
			return rel.Namespace
		}
		return n
	}
	var objs []*unstructured.Unstructured
	get := func(kind, namespace, name string) (*unstructured.Unstructured, error) {
		u := newObject(HelmRepositoryGVK.GroupVersion().WithKind(kind))
		if err := s.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
			return nil, fmt.Errorf("release %s/%s: read %s %s/%s: %w", rel.Namespace, rel.Name, kind, namespace, name, err)
		}
		objs = append(objs, u)
		return u, nil
	}
	switch {
	case rel.Spec.Chart != nil:
		ref := rel.Spec.Chart.Spec.SourceRef
		if _, err := get(ref.Kind, ns(ref.Namespace), ref.Name); err != nil {
			return nil, err
		}
	case rel.Spec.ChartRef != nil:
		ref := rel.Spec.ChartRef
		u, err := get(ref.Kind, ns(ref.Namespace), ref.Name)
		if err != nil {
			return nil, err
		}
		if ref.Kind == source.KindHelmChart {
			// A HelmChart takes its chart from its own sourceRef.
			kind, _, _ := unstructured.NestedString(u.Object, "spec", "sourceRef", "kind")
			name, _, _ := unstructured.NestedString(u.Object, "spec", "sourceRef", "name")
			if kind != "" && name != "" {
				if _, err := get(kind, u.GetNamespace(), name); err != nil {
					return nil, err
				}
			}
		}
	}
	decoded, err := decodeSources(objs)
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: %w", rel.Namespace, rel.Name, err)
	}
	return release.Charts(s.resolver, decoded).GetChart(ctx, rel)
}

// decodeSources decodes source objects as read from the cluster (without
// their status) with release.Decode, strictly.
func decodeSources(objs []*unstructured.Unstructured) (*release.Objects, error) {
	var buf bytes.Buffer
	for _, u := range objs {
		data, err := specJSON(u)
		if err != nil {
			return nil, err
		}
		buf.WriteString("---\n")
		buf.Write(data)
		buf.WriteString("\n")
	}
	return release.Decode(&buf)
}
