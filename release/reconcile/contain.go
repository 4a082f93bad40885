package reconcile

import (
	"context"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/values"
)

// containedCharts is the ChartGetter of a Config, its panics
// contained: a panicking getter fails the reconcile like one that returns
// an error (ArtifactFailed).
type containedCharts struct{ ChartGetter }

func (c containedCharts) GetChart(ctx context.Context, rel *release.Release) (*Chart, error) {
	var ch *Chart
	err := release.Contain("reconcile.Config.Charts", func() (err error) {
		ch, err = c.ChartGetter.GetChart(ctx, rel)
		return err
	})
	return ch, err
}

// containedValues is the values reader of a Config, its panics
// contained: a panicking reader fails the reconcile like one that returns
// an error (ValuesError).
type containedValues struct{ values.Reader }

func (c containedValues) Read(ctx context.Context, kind values.Kind, namespace, name string) (map[string][]byte, error) {
	var data map[string][]byte
	err := release.Contain("reconcile.Config.Values", func() (err error) {
		data, err = c.Reader.Read(ctx, kind, namespace, name)
		return err
	})
	return data, err
}
