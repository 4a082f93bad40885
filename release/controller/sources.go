package controller

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
)

// chartGetter is the chart getter of a Config or FleetConfig (named by
// config): charts, or, with resolver, one that reads the source objects a
// release names through reader and resolves its chart with them. Exactly
// one of charts and resolver must be set.
func chartGetter(config string, charts reconcile.ChartGetter, resolver source.Resolver, reader client.Reader) (reconcile.ChartGetter, error) {
	switch {
	case charts == nil && resolver == nil:
		return nil, fmt.Errorf("controller: one of %[1]s.Charts and %[1]s.Resolver is required", config)
	case charts != nil && resolver != nil:
		return nil, fmt.Errorf("controller: set only one of %[1]s.Charts and %[1]s.Resolver", config)
	case resolver != nil:
		return &sourceCharts{reader: reader, resolver: resolver}, nil
	}
	return charts, nil
}

// sourceCharts is a reconcile.ChartGetter that reads the source objects a
// release names from the cluster and resolves its chart through
// reconcile.Charts with them.
type sourceCharts struct {
	reader   client.Reader
	resolver source.Resolver
}

func (s *sourceCharts) GetChart(ctx context.Context, rel *release.Release) (*reconcile.Chart, error) {
	objs := &release.Objects{}
	get := func(kind, namespace, name string) error {
		key := client.ObjectKey{Namespace: nsOr(rel, namespace), Name: name}
		var err error
		switch kind {
		case source.KindHelmRepository:
			o := &source.HelmRepository{}
			if err = s.reader.Get(ctx, key, o); err == nil {
				objs.HelmRepositories = append(objs.HelmRepositories, o)
			}
		case source.KindOCIRepository:
			o := &source.OCIRepository{}
			if err = s.reader.Get(ctx, key, o); err == nil {
				objs.OCIRepositories = append(objs.OCIRepositories, o)
			}
		case source.KindHelmChart:
			o := &source.HelmChart{}
			if err = s.reader.Get(ctx, key, o); err == nil {
				objs.HelmCharts = append(objs.HelmCharts, o)
				// A HelmChart takes its chart from its own sourceRef.
				if ref := o.Spec.SourceRef; ref.Kind == source.KindHelmRepository {
					repo := &source.HelmRepository{}
					if err = s.reader.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: ref.Name}, repo); err == nil {
						objs.HelmRepositories = append(objs.HelmRepositories, repo)
					}
				}
			}
		default:
			// reconcile.Charts names the unsupported kind.
			return nil
		}
		if err != nil {
			return fmt.Errorf("release %s/%s: read %s %s: %w", rel.Namespace, rel.Name, kind, key, err)
		}
		return nil
	}
	var err error
	switch {
	case rel.Spec.Chart != nil:
		ref := rel.Spec.Chart.Spec.SourceRef
		err = get(ref.Kind, ref.Namespace, ref.Name)
	case rel.Spec.ChartRef != nil:
		err = get(rel.Spec.ChartRef.Kind, rel.Spec.ChartRef.Namespace, rel.Spec.ChartRef.Name)
	}
	if err != nil {
		return nil, err
	}
	return reconcile.Charts(s.resolver, objs).GetChart(ctx, rel)
}
