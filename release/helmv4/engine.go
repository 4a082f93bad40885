package helmv4

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	action3 "helm.sh/helm/v3/pkg/action"
	chart3 "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	action4 "helm.sh/helm/v4/pkg/action"
	kube4 "helm.sh/helm/v4/pkg/kube"
	kubefake4 "helm.sh/helm/v4/pkg/kube/fake"
	release4 "helm.sh/helm/v4/pkg/release/v1"
	storage4 "helm.sh/helm/v4/pkg/storage"
	driver4 "helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// Engine is the Helm v4 engine (helm.sh/helm/v4) of a
// reconcile.Reconciler. The zero value is ready to use.
type Engine struct {
	// NativeKubeClient writes and waits with Helm v4's own kube client,
	// built on the cluster's RESTClientGetter (release/kube's clusters):
	// real server-side apply with field managers and conflicts, and Helm
	// v4's waits (the wait strategy: kstatus watcher or legacy). Those
	// waits do not evaluate spec.healthCheckExprs and observe the
	// caller's context only through the action's timeout. False (the
	// default) adapts the cluster's Helm v3 kube client instead (every
	// backend, release/memory included): see kubeClient.
	NativeKubeClient bool
}

var _ reconcile.Engine = Engine{}

// HelmMajor returns 4.
func (Engine) HelmMajor() int { return 4 }

// config builds Helm v4's configuration over the cluster's Helm v3 one:
// the same storage (through storageDriver), the same capabilities, and
// a kube client (kubeClient over the v3 one, or Helm v4's own).
func (e Engine) config(cfg *action3.Configuration, namespace string) (*action4.Configuration, error) {
	c := action4.NewConfiguration(action4.ConfigurationSetLogger(slog.DiscardHandler))
	if cfg.RESTClientGetter != nil {
		c.RESTClientGetter = cfg.RESTClientGetter
	}
	if cfg.Releases == nil || cfg.Releases.Driver == nil {
		return nil, errors.New("helm v4 engine: the cluster's Helm configuration has no release storage")
	}
	c.Releases = storage4.Init(storageDriver{v3: cfg.Releases.Driver})
	c.Releases.MaxHistory = cfg.Releases.MaxHistory
	caps, err := capabilitiesToV4(cfg.Capabilities)
	if err != nil {
		return nil, err
	}
	c.Capabilities = caps
	getter, full := cfg.RESTClientGetter.(genericclioptions.RESTClientGetter)
	switch {
	case e.NativeKubeClient && full:
		kc := kube4.New(getter)
		kc.Namespace = namespace
		kc.SetLogger(slog.DiscardHandler)
		c.KubeClient = nativeClient{Client: kc}
	case e.NativeKubeClient:
		return nil, errors.New("helm v4 engine: NativeKubeClient needs a cluster whose Helm configuration has a full RESTClientGetter (genericclioptions), as release/kube's clusters have; release/memory and a rendered-manifest Distributor (which writes through its own client to its members) have none: use the engine without NativeKubeClient there")
	default:
		c.KubeClient = kubeClient{v3: cfg.KubeClient}
	}
	return c, nil
}

// waitStrategy is Flux's choice of Helm v4's wait strategy: none but
// hooks when waits are disabled, legacy when spec.waitStrategy says so,
// else the kstatus watcher (poller).
func waitStrategy(w reconcile.WaitOptions) kube4.WaitStrategy {
	switch {
	case !w.Wait:
		return kube4.HookOnlyStrategy
	case w.Strategy == release.WaitStrategyLegacy:
		return kube4.LegacyStrategy
	}
	return kube4.StatusWatcherStrategy
}

// ssaMode resolves spec.upgrade/rollback.serverSideApply: enabled,
// disabled, or (auto, unset) the apply method Helm v4 recorded in rec.
func ssaMode(mode release.ServerSideApplyMode, rec func() (*release4.Release, error)) (bool, error) {
	switch mode {
	case release.ServerSideApplyEnabled:
		return true, nil
	case release.ServerSideApplyDisabled:
		return false, nil
	}
	r, err := rec()
	if err != nil {
		return false, err
	}
	return r.ApplyMethod == string(release4.ApplyMethodServerSideApply), nil
}

// releaseNamespace scopes Helm v4's own kube client (NativeKubeClient)
// to the namespace of release name's latest record, as Helm's CLI scopes
// it to the release's namespace: rollback and uninstall build the
// manifest's objects with the client's namespace, so without it the
// objects a chart leaves unnamespaced would be looked for in the
// RESTClientGetter's default namespace. The adapter of the cluster's v3
// client is scoped already; a release without records is left to Helm
// to report.
func releaseNamespace(c *action4.Configuration, name string) {
	kc, ok := c.KubeClient.(nativeClient)
	if !ok || kc.Namespace != "" {
		return
	}
	if rel, err := record(c.Releases, name, 0)(); err == nil {
		kc.Namespace = rel.Namespace
	}
}

// record reads release name's record version (0: the latest) from s.
func record(s *storage4.Storage, name string, version int) func() (*release4.Release, error) {
	return func() (*release4.Release, error) {
		var r any
		var err error
		if version == 0 {
			r, err = s.Last(name)
		} else {
			r, err = s.Get(name, version)
		}
		if err != nil {
			return nil, mapErr(err)
		}
		rel, ok := r.(*release4.Release)
		if !ok || rel == nil {
			return nil, fmt.Errorf("helm v4 engine: release %s: record of type %T", name, r)
		}
		return rel, nil
	}
}

// Install runs Helm v4's install. Server-side apply is
// spec.install.serverSideApply, true when unset (Flux 2.8's default), and
// it forces conflicts (Flux).
func (e Engine) Install(_ context.Context, cfg *action3.Configuration, ch *chart3.Chart, vals map[string]any, o reconcile.InstallOptions) error {
	c, err := e.config(cfg, o.Namespace)
	if err != nil {
		return err
	}
	ch4, err := chartToV4(ch)
	if err != nil {
		return err
	}
	i := action4.NewInstall(c)
	i.ReleaseName = o.ReleaseName
	i.Namespace = o.Namespace
	i.Timeout = o.Timeout
	i.WaitStrategy = waitStrategy(o.WaitOptions)
	i.WaitForJobs = o.WaitForJobs
	i.DisableHooks = o.DisableHooks
	i.DisableOpenAPIValidation = o.DisableOpenAPIValidation
	i.SkipSchemaValidation = o.SkipSchemaValidation
	i.Replace = o.Replace
	i.CreateNamespace = o.CreateNamespace
	i.SkipCRDs = o.SkipCRDs
	if o.PostRenderer != nil {
		i.PostRenderer = o.PostRenderer
	}
	i.PostRenderStrategy = action4.PostRenderStrategy(o.PostRenderStrategy)
	ssa := o.ServerSideApply == nil || *o.ServerSideApply
	i.ServerSideApply, i.ForceConflicts = ssa, ssa
	i.TakeOwnership = o.TakeOwnership
	_, err = i.Run(ch4, vals)
	return mapErr(err)
}

// Upgrade runs Helm v4's upgrade. Server-side apply follows
// spec.upgrade.serverSideApply (auto: the latest record's apply method),
// forces conflicts when on, and spec.upgrade.force replaces objects only
// when off (Flux).
func (e Engine) Upgrade(_ context.Context, cfg *action3.Configuration, name string, ch *chart3.Chart, vals map[string]any, o reconcile.UpgradeOptions) error {
	c, err := e.config(cfg, o.Namespace)
	if err != nil {
		return err
	}
	ch4, err := chartToV4(ch)
	if err != nil {
		return err
	}
	ssa, err := ssaMode(o.ServerSideApply, record(c.Releases, name, 0))
	if err != nil {
		return err
	}
	u := action4.NewUpgrade(c)
	u.Namespace = o.Namespace
	u.Timeout = o.Timeout
	u.WaitStrategy = waitStrategy(o.WaitOptions)
	u.WaitForJobs = o.WaitForJobs
	u.DisableHooks = o.DisableHooks
	u.DisableOpenAPIValidation = o.DisableOpenAPIValidation
	u.SkipSchemaValidation = o.SkipSchemaValidation
	u.CleanupOnFail = o.CleanupOnFail
	u.MaxHistory = o.MaxHistory
	u.ResetValues = o.ResetValues
	u.ReuseValues = o.ReuseValues
	if o.PostRenderer != nil {
		u.PostRenderer = o.PostRenderer
	}
	u.PostRenderStrategy = action4.PostRenderStrategy(o.PostRenderStrategy)
	u.ServerSideApply, u.ForceConflicts = fmt.Sprint(ssa), ssa
	u.TakeOwnership = o.TakeOwnership
	u.ForceReplace = o.Force && !ssa
	_, err = u.Run(name, ch4, vals)
	return mapErr(err)
}

// Rollback runs Helm v4's rollback. Server-side apply follows
// spec.rollback.serverSideApply (auto: the target revision's apply
// method, as Helm v4 does), as Upgrade. Helm v4 has no recreate.
func (e Engine) Rollback(_ context.Context, cfg *action3.Configuration, name string, o reconcile.RollbackOptions) error {
	c, err := e.config(cfg, "")
	if err != nil {
		return err
	}
	releaseNamespace(c, name)
	ssa, err := ssaMode(o.ServerSideApply, record(c.Releases, name, o.Version))
	if err != nil {
		return err
	}
	rb := action4.NewRollback(c)
	rb.Version = o.Version
	rb.Timeout = o.Timeout
	rb.WaitStrategy = waitStrategy(o.WaitOptions)
	rb.WaitForJobs = o.WaitForJobs
	rb.DisableHooks = o.DisableHooks
	rb.CleanupOnFail = o.CleanupOnFail
	rb.MaxHistory = o.MaxHistory
	rb.ServerSideApply, rb.ForceConflicts = fmt.Sprint(ssa), ssa
	rb.ForceReplace = o.Force && !ssa
	return mapErr(rb.Run(name))
}

// Uninstall runs Helm v4's uninstall.
func (e Engine) Uninstall(_ context.Context, cfg *action3.Configuration, name string, o reconcile.UninstallOptions) error {
	c, err := e.config(cfg, "")
	if err != nil {
		return err
	}
	releaseNamespace(c, name)
	u := action4.NewUninstall(c)
	u.KeepHistory = o.KeepHistory
	u.DisableHooks = o.DisableHooks
	u.WaitStrategy = waitStrategy(o.WaitOptions)
	u.Timeout = o.Timeout
	u.DeletionPropagation = o.DeletionPropagation
	_, err = u.Run(name)
	return mapErr(err)
}

// Test runs Helm v4's release tests.
func (e Engine) Test(_ context.Context, cfg *action3.Configuration, name string, o reconcile.TestOptions) error {
	c, err := e.config(cfg, o.Namespace)
	if err != nil {
		return err
	}
	t := action4.NewReleaseTesting(c)
	t.Namespace = o.Namespace
	t.Timeout = o.Timeout
	t.Filters = o.Filters
	_, shutdown, err := t.Run(name)
	if shutdown != nil {
		if serr := shutdown(); err == nil {
			err = serr
		}
	}
	return mapErr(err)
}

// Render renders with Helm v4's install in a dry run against caps only:
// a printing kube client and a fresh memory storage keep it off the
// cluster.
func (e Engine) Render(_ context.Context, caps *chartutil.Capabilities, ch *chart3.Chart, vals map[string]any, o reconcile.RenderOptions) (string, error) {
	caps4, err := capabilitiesToV4(caps)
	if err != nil {
		return "", err
	}
	ch4, err := chartToV4(ch)
	if err != nil {
		return "", err
	}
	c := action4.NewConfiguration(action4.ConfigurationSetLogger(slog.DiscardHandler))
	c.Capabilities = caps4
	c.KubeClient = &kubefake4.PrintingKubeClient{Out: io.Discard, LogOutput: io.Discard}
	mem := driver4.NewMemory()
	mem.SetNamespace(o.Namespace)
	c.Releases = storage4.Init(mem)
	i := action4.NewInstall(c)
	// A server dry run renders with exactly the configuration's
	// capabilities (a client one would add Helm's defaults).
	i.DryRunStrategy, i.Replace = action4.DryRunServer, true
	i.ReleaseName = o.ReleaseName
	i.Namespace = o.Namespace
	if o.PostRenderer != nil {
		i.PostRenderer = o.PostRenderer
	}
	i.PostRenderStrategy = action4.PostRenderStrategy(o.PostRenderStrategy)
	i.SkipSchemaValidation = o.SkipSchemaValidation
	i.WaitStrategy = kube4.HookOnlyStrategy
	r, err := i.Run(ch4, vals)
	if err != nil {
		return "", mapErr(err)
	}
	rel, ok := r.(*release4.Release)
	if !ok {
		return "", fmt.Errorf("helm v4 engine: render: release of type %T", r)
	}
	return rel.Manifest, nil
}
