package fleettest_test

import (
	"context"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"

	"github.com/helmfleet/helmfleet/release"
)

// install is `helm install name -n apps` of ch on c.
func install(ctx context.Context, c release.HelmConfigurer, ch *chart.Chart, name string) error {
	cfg, err := c.HelmConfig(ctx, release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	if err != nil {
		return err
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace = name, "apps"
	_, err = in.RunWithContext(ctx, ch, nil)
	return err
}
