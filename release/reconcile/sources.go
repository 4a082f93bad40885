package reconcile

import (
	"context"
	"fmt"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/source"
	"github.com/helmfleet/helmfleet/values"
)

// Charts adapts a source.Resolver to a ChartGetter: a Release's
// chart.spec finds its HelmRepository among the sources of objs, a
// chartRef its OCIRepository or HelmChart (and the HelmChart's
// HelmRepository). Any other sourceRef kind (GitRepository, Bucket) is an
// error naming the Release and the field; to serve a chart from a local
// directory or archive, write a ChartGetter (ChartGetterFunc) that loads
// it. The resolved chart's digest is recorded so a re-pushed tag is seen as a
// change. When chart.spec.valuesFiles is set, those files replace the
// chart's values.yaml (which counts only if listed), as in Flux: they are
// handed to values.Compose in order and the chart's defaults are cleared.
func Charts(resolver source.Resolver, objs *release.Objects) ChartGetter {
	return ChartGetterFunc(func(ctx context.Context, rel *release.Release) (*Chart, error) {
		ref, err := sourceRef(rel, objs)
		if err != nil {
			return nil, err
		}
		ch, err := resolver.Resolve(ctx, ref)
		if err != nil {
			return nil, err
		}
		out := &Chart{Chart: ch.Chart, Digest: ch.Digest, Verified: ch.Verified, Warnings: ch.Warnings,
			FieldWarnings: source.FieldWarnings(ref, rel.Spec.Interval.Duration)}
		if len(ref.ValuesFiles) > 0 && ch.Chart != nil {
			c := *ch.Chart
			c.Values = map[string]any{}
			out.Chart = &c
			for _, f := range ch.ValuesFiles {
				out.ValuesFiles = append(out.ValuesFiles, values.File{Name: f.Name, Data: f.Data})
			}
		}
		return out, nil
	})
}

// markSourceFieldWarnings adds the warnings of the chart's source
// objects (Chart.FieldWarnings) to the Result's, after the Release's own,
// and sets the FieldWarnings condition to them all. When the chart was
// not fetched (err), the condition holds the Release's own.
func (ru *run) markSourceFieldWarnings(d *desired, err error) {
	if err != nil || len(d.chart.FieldWarnings) == 0 {
		return
	}
	for _, w := range d.chart.FieldWarnings {
		ru.warn(w)
	}
	ru.markFieldWarnings(ru.res.Warnings)
}

// sourceRef finds the source objects a Release names.
func sourceRef(rel *release.Release, objs *release.Objects) (source.Ref, error) {
	if objs == nil {
		objs = &release.Objects{}
	}
	ns := func(n string) string {
		if n == "" {
			return rel.Namespace
		}
		return n
	}
	switch {
	case rel.Spec.Chart != nil:
		s := rel.Spec.Chart.Spec
		ref := source.Ref{Chart: s.Chart, Version: s.Version, ValuesFiles: s.ValuesFiles, IgnoreMissingValuesFiles: s.IgnoreMissingValuesFiles}
		switch s.SourceRef.Kind {
		case source.KindHelmRepository:
			for _, r := range objs.HelmRepositories {
				if r.Name == s.SourceRef.Name && r.Namespace == ns(s.SourceRef.Namespace) {
					ref.HelmRepository = r
					if v := s.Verify; v != nil {
						// Flux copies it to the HelmChart it creates in the
						// repository's namespace, where the Secret is read.
						ref.Verify = &source.Verification{Provider: v.Provider, Namespace: r.Namespace,
							Object: release.Kind + " " + refOf(rel), Field: "spec.chart.spec.verify"}
						if v.SecretRef != nil {
							ref.Verify.SecretRef = &source.LocalObjectReference{Name: v.SecretRef.Name}
						}
					}
					return ref, nil
				}
			}
			return ref, fmt.Errorf("release %s: spec.chart.spec.sourceRef: HelmRepository %s/%s not found among the sources", refOf(rel), ns(s.SourceRef.Namespace), s.SourceRef.Name)
		default:
			return ref, fmt.Errorf("release %s: spec.chart.spec.sourceRef.kind: %q sources are not supported by the source resolvers (use HelmRepository, or a chartRef)", refOf(rel), s.SourceRef.Kind)
		}
	case rel.Spec.ChartRef != nil:
		cr := rel.Spec.ChartRef
		switch cr.Kind {
		case source.KindOCIRepository:
			for _, r := range objs.OCIRepositories {
				if r.Name == cr.Name && r.Namespace == ns(cr.Namespace) {
					return source.Ref{OCIRepository: r}, nil
				}
			}
		case source.KindHelmChart:
			for _, hc := range objs.HelmCharts {
				if hc.Name != cr.Name || hc.Namespace != ns(cr.Namespace) {
					continue
				}
				ref := source.Ref{HelmChart: hc}
				if k := hc.Spec.SourceRef.Kind; k != source.KindHelmRepository {
					// Flux resolves the kind named; only HelmRepository
					// sources are served, and one of that name is not it.
					return ref, fmt.Errorf("release %s: HelmChart %s/%s: spec.sourceRef.kind: %q sources are not served (only HelmRepository)", refOf(rel), hc.Namespace, hc.Name, k)
				}
				for _, r := range objs.HelmRepositories {
					if r.Name == hc.Spec.SourceRef.Name && r.Namespace == hc.Namespace {
						ref.HelmRepository = r
						return ref, nil
					}
				}
				return ref, fmt.Errorf("release %s: HelmChart %s/%s: spec.sourceRef: HelmRepository %q not found among the sources", refOf(rel), hc.Namespace, hc.Name, hc.Spec.SourceRef.Name)
			}
		}
		return source.Ref{}, fmt.Errorf("release %s: spec.chartRef: %s %s/%s not found among the sources", refOf(rel), cr.Kind, ns(cr.Namespace), cr.Name)
	}
	return source.Ref{}, fmt.Errorf("release %s: spec: neither chart nor chartRef is set", refOf(rel))
}
