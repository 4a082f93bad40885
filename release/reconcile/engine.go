package reconcile

import (
	"context"
	"io"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	helmpostrender "helm.sh/helm/v3/pkg/postrender"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/helmfleet/helmfleet/release"
)

// Engine runs Helm's actions for a Reconciler: the one seam between the
// reconciler's decisions and a Helm major version. It speaks the types
// the reconciler and the clusters already speak (Helm v3's chart, its
// action.Configuration and, through that configuration's storage, its
// release records); an engine for another Helm major converts at its own
// boundary. The reconciler reads the history itself through cfg.Releases:
// Helm v3 and v4 store the same release records, so reads need no
// engine.
//
// cfg is the cluster's configuration for the release's scope as the
// reconciler prepared it (its kube client observes ctx and waits with
// kstatus and the release's health checks; its storage is cached for the
// reconcile). Each method runs one action and returns Helm's error as it
// is: the reconciler matches Helm v3's errors (driver.ErrReleaseNotFound)
// and withholds their text where it must, so an engine maps its own
// errors onto those. Implementations must be safe for concurrent use on
// different releases.
type Engine interface {
	// HelmMajor is the Helm major version the engine runs (3 or 4).
	HelmMajor() int
	// Install installs ch with vals as a new release.
	Install(ctx context.Context, cfg *action.Configuration, ch *chart.Chart, vals map[string]any, opts InstallOptions) error
	// Upgrade upgrades release name to ch with vals.
	Upgrade(ctx context.Context, cfg *action.Configuration, name string, ch *chart.Chart, vals map[string]any, opts UpgradeOptions) error
	// Rollback rolls release name back to opts.Version.
	Rollback(ctx context.Context, cfg *action.Configuration, name string, opts RollbackOptions) error
	// Uninstall removes release name.
	Uninstall(ctx context.Context, cfg *action.Configuration, name string, opts UninstallOptions) error
	// Test runs the test hooks of release name.
	Test(ctx context.Context, cfg *action.Configuration, name string, opts TestOptions) error
	// Render renders ch with vals as an install would, client-side with
	// caps, and returns the manifest (hooks excluded); nothing reaches a
	// cluster or its storage.
	Render(ctx context.Context, caps *chartutil.Capabilities, ch *chart.Chart, vals map[string]any, opts RenderOptions) (string, error)
}

// WaitOptions say how an action waits for the objects it wrote.
type WaitOptions struct {
	// Timeout bounds the action (and its waits).
	Timeout time.Duration
	// Wait waits for the objects to be ready.
	Wait bool
	// WaitForJobs also waits for Jobs to complete.
	WaitForJobs bool
	// Strategy is spec.waitStrategy.name (release.WaitStrategyPoller,
	// release.WaitStrategyLegacy; "" is poller). The Helm v3 engine
	// always waits with the cluster's kube client (kstatus).
	Strategy string
}

// InstallOptions are the settings of one install (spec.install).
type InstallOptions struct {
	WaitOptions
	// ReleaseName and Namespace name the release and its objects'
	// default namespace.
	ReleaseName, Namespace string
	// DisableHooks, DisableOpenAPIValidation, SkipSchemaValidation,
	// Replace, CreateNamespace and SkipCRDs are Helm's install flags.
	DisableHooks, DisableOpenAPIValidation, SkipSchemaValidation, Replace, CreateNamespace, SkipCRDs bool
	// PostRenderer runs after rendering; nil for none.
	PostRenderer helmpostrender.PostRenderer
	// PostRenderStrategy is spec.postRenderStrategy ("" is the engine's
	// default). Helm v3 never post-renders hooks (nohooks).
	PostRenderStrategy string
	// ServerSideApply is spec.install.serverSideApply (nil: unset). Helm
	// v3 applies client-side whatever it says.
	ServerSideApply *bool
	// TakeOwnership adopts existing objects the release renders whatever
	// their Helm ownership metadata: spec.install.disableTakeOwnership
	// negated, as Flux sets it (Helm's --take-ownership, on both engines).
	TakeOwnership bool
}

// UpgradeOptions are the settings of one upgrade (spec.upgrade).
type UpgradeOptions struct {
	WaitOptions
	// Namespace is the objects' default namespace.
	Namespace string
	// DisableHooks, DisableOpenAPIValidation, SkipSchemaValidation,
	// Force, CleanupOnFail, ResetValues and ReuseValues are Helm's
	// upgrade flags.
	DisableHooks, DisableOpenAPIValidation, SkipSchemaValidation, Force, CleanupOnFail, ResetValues, ReuseValues bool
	// MaxHistory bounds the revisions kept (0: all).
	MaxHistory int
	// PostRenderer runs after rendering; nil for none.
	PostRenderer helmpostrender.PostRenderer
	// PostRenderStrategy is spec.postRenderStrategy, as InstallOptions'.
	PostRenderStrategy string
	// ServerSideApply is spec.upgrade.serverSideApply ("" is auto).
	// Helm v3 applies client-side whatever it says.
	ServerSideApply release.ServerSideApplyMode
	// TakeOwnership is spec.upgrade.disableTakeOwnership negated, as
	// InstallOptions'.
	TakeOwnership bool
}

// RollbackOptions are the settings of one rollback (spec.rollback).
type RollbackOptions struct {
	WaitOptions
	// Version is the revision to roll back to.
	Version int
	// DisableHooks, Recreate, Force and CleanupOnFail are Helm's rollback
	// flags (Helm v4 has no Recreate).
	DisableHooks, Recreate, Force, CleanupOnFail bool
	// MaxHistory bounds the revisions kept (0: all).
	MaxHistory int
	// ServerSideApply is spec.rollback.serverSideApply ("" is auto).
	// Helm v3 applies client-side whatever it says.
	ServerSideApply release.ServerSideApplyMode
}

// UninstallOptions are the settings of one uninstall (spec.uninstall).
type UninstallOptions struct {
	WaitOptions
	// KeepHistory and DisableHooks are Helm's uninstall flags.
	KeepHistory, DisableHooks bool
	// DeletionPropagation is the policy of the deletes.
	DeletionPropagation string
}

// TestOptions are the settings of one test run (spec.test).
type TestOptions struct {
	// Namespace is the release's namespace.
	Namespace string
	// Timeout bounds the run.
	Timeout time.Duration
	// Filters are Helm's test filters ("name", "!name").
	Filters map[string][]string
}

// RenderOptions are the settings of one render (Plan).
type RenderOptions struct {
	// ReleaseName and Namespace name the release.
	ReleaseName, Namespace string
	// PostRenderer runs after rendering; nil for none.
	PostRenderer helmpostrender.PostRenderer
	// PostRenderStrategy is spec.postRenderStrategy, as InstallOptions'.
	PostRenderStrategy string
	// SkipSchemaValidation skips the chart's values schema.
	SkipSchemaValidation bool
}

// HelmV3 is the Helm v3 engine (helm.sh/helm/v3), the Reconciler's
// default: today's actions, applied client-side, waited with the
// cluster's kube client. It ignores the options only Helm v4 acts on
// (ServerSideApply, WaitOptions.Strategy), and the reconciler warns of
// them (release.HelmV3Engine).
type HelmV3 struct{}

var _ Engine = HelmV3{}

// HelmMajor returns 3.
func (HelmV3) HelmMajor() int { return 3 }

// Install runs Helm v3's install.
func (HelmV3) Install(_ context.Context, cfg *action.Configuration, ch *chart.Chart, vals map[string]any, o InstallOptions) error {
	i := action.NewInstall(cfg)
	i.ReleaseName = o.ReleaseName
	i.Namespace = o.Namespace
	i.Timeout = o.Timeout
	i.Wait = o.Wait
	i.WaitForJobs = o.WaitForJobs
	i.DisableHooks = o.DisableHooks
	i.DisableOpenAPIValidation = o.DisableOpenAPIValidation
	i.SkipSchemaValidation = o.SkipSchemaValidation
	i.Replace = o.Replace
	i.TakeOwnership = o.TakeOwnership
	i.CreateNamespace = o.CreateNamespace
	i.SkipCRDs = o.SkipCRDs
	i.PostRenderer = o.PostRenderer
	_, err := i.Run(ch, vals)
	return err
}

// Upgrade runs Helm v3's upgrade.
func (HelmV3) Upgrade(_ context.Context, cfg *action.Configuration, name string, ch *chart.Chart, vals map[string]any, o UpgradeOptions) error {
	u := action.NewUpgrade(cfg)
	u.Namespace = o.Namespace
	u.Timeout = o.Timeout
	u.Wait = o.Wait
	u.WaitForJobs = o.WaitForJobs
	u.DisableHooks = o.DisableHooks
	u.DisableOpenAPIValidation = o.DisableOpenAPIValidation
	u.SkipSchemaValidation = o.SkipSchemaValidation
	u.Force = o.Force
	u.CleanupOnFail = o.CleanupOnFail
	u.TakeOwnership = o.TakeOwnership
	u.MaxHistory = o.MaxHistory
	u.ResetValues = o.ResetValues
	u.ReuseValues = o.ReuseValues
	u.PostRenderer = o.PostRenderer
	_, err := u.Run(name, ch, vals)
	return err
}

// Rollback runs Helm v3's rollback.
func (HelmV3) Rollback(_ context.Context, cfg *action.Configuration, name string, o RollbackOptions) error {
	rb := action.NewRollback(cfg)
	rb.Version = o.Version
	rb.Timeout = o.Timeout
	rb.Wait = o.Wait
	rb.WaitForJobs = o.WaitForJobs
	rb.DisableHooks = o.DisableHooks
	rb.Recreate = o.Recreate
	rb.Force = o.Force
	rb.CleanupOnFail = o.CleanupOnFail
	rb.MaxHistory = o.MaxHistory
	return rb.Run(name)
}

// Uninstall runs Helm v3's uninstall.
func (HelmV3) Uninstall(_ context.Context, cfg *action.Configuration, name string, o UninstallOptions) error {
	u := action.NewUninstall(cfg)
	u.KeepHistory = o.KeepHistory
	u.DisableHooks = o.DisableHooks
	u.Wait = o.Wait
	u.Timeout = o.Timeout
	u.DeletionPropagation = o.DeletionPropagation
	_, err := u.Run(name)
	return err
}

// Test runs Helm v3's release tests.
func (HelmV3) Test(_ context.Context, cfg *action.Configuration, name string, o TestOptions) error {
	t := action.NewReleaseTesting(cfg)
	t.Namespace = o.Namespace
	t.Timeout = o.Timeout
	t.Filters = o.Filters
	_, err := t.Run(name)
	return err
}

// Render renders with Helm v3's install in client-side dry run.
func (HelmV3) Render(_ context.Context, caps *chartutil.Capabilities, ch *chart.Chart, vals map[string]any, o RenderOptions) (string, error) {
	// A client-side dry run that is not ClientOnly renders with exactly
	// the configuration's capabilities (ClientOnly would add Helm's
	// default API versions, which a cluster may not serve); the printing
	// client and a fresh memory storage keep it off the cluster.
	mem := driver.NewMemory()
	mem.SetNamespace(o.Namespace)
	i := action.NewInstall(&action.Configuration{
		Capabilities: caps,
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Releases:     storage.Init(mem),
		Log:          func(string, ...any) {},
	})
	i.DryRun, i.Replace = true, true
	i.ReleaseName = o.ReleaseName
	i.Namespace = o.Namespace
	i.PostRenderer = o.PostRenderer
	i.SkipSchemaValidation = o.SkipSchemaValidation
	h, err := i.Run(ch, vals)
	if err != nil {
		return "", err
	}
	return h.Manifest, nil
}

// engine is the engine of this run's Release, chosen once per run:
// Config.EngineFor's choice, else Config.Engine, else Helm v3.
func (ru *run) engine() Engine {
	if ru.eng == nil {
		ru.eng = ru.r.engine
		if ru.r.engineFor != nil {
			if e := ru.r.engineFor(ru.rel); e != nil {
				ru.eng = e
			}
		}
	}
	return ru.eng
}

// fieldWarnings are release.FieldWarnings of the run's Release, less
// those of fields the run's engine acts on (Helm v4: server-side apply,
// the wait strategy and the post-render strategy).
func (ru *run) fieldWarnings() []string {
	w := release.FieldWarnings(ru.rel)
	if ru.engine().HelmMajor() < 4 {
		return w
	}
	out := w[:0:0]
	for _, s := range w {
		if strings.HasSuffix(s, release.HelmV3Engine) || strings.HasSuffix(s, helmV3PostRender) ||
			strings.HasPrefix(s, "spec.waitStrategy.name:") {
			continue
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// helmV3PostRender ends release.FieldWarnings' warning of
// spec.postRenderStrategy, which only Helm v4 acts on.
const helmV3PostRender = "(nohooks): Helm v3 engine"

// waitOptions are the wait settings of an action whose spec disables
// waits with disableWait and jobs with disableJobs.
func (ru *run) waitOptions(timeout time.Duration, disableWait, disableJobs bool) WaitOptions {
	w := WaitOptions{Timeout: timeout, Wait: !disableWait, WaitForJobs: !disableWait && !disableJobs}
	if ws := ru.rel.Spec.WaitStrategy; ws != nil {
		w.Strategy = ws.Name
	}
	return w
}
