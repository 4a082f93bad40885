package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/controller"
	"github.com/helmfleet/helmfleet/release/controller/controllertest"
	"github.com/helmfleet/helmfleet/release/crds"
	"github.com/helmfleet/helmfleet/release/fleettest"
)

// The demo's namespace and objects.
const demoNS = "apps"

// demoRelease is a HelmRelease of the test chart; the demo's clusters run
// no controllers, so waits are off.
func demoRelease(name, extra string) *release.Release {
	y := `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: ` + name + `, namespace: ` + demoNS + `, generation: 1}
spec:
  interval: 10m
  releaseName: ` + name + `
  chart:
    spec:
      chart: podinfo
      version: "6.5.0"
      sourceRef: {kind: HelmRepository, name: podinfo}
  install: {disableWait: true}
  upgrade: {disableWait: true}
` + extra
	rel := &release.Release{}
	if err := yaml.UnmarshalStrict([]byte(y), rel); err != nil {
		panic(err) // a constant that decodes
	}
	return rel
}

// hub is where the demo's story happens: a real API server watched by the
// manager, or the fake client with the reconciler called per change.
type hub interface {
	// client writes the team's objects and reads statuses.
	client() client.Client
	// settle returns once the releases named have reached a status for
	// which want is true (manager), or after reconciling them in order
	// (fake: what the watches would do).
	settle(ctx context.Context, want func(*release.Release) bool, names ...string) error
}

// demo runs the story on a kube-apiserver when envtest's binaries are
// at hand, else in memory.
func demo(ctx context.Context, out io.Writer) error {
	assets, err := kubeAssets()
	if err != nil {
		fmt.Fprintln(out, "hub: controller-runtime's fake client (in memory); no kube-apiserver:", firstLine(err.Error()))
		h, err := newMemoryHub()
		if err != nil {
			return err
		}
		return story(ctx, out, h)
	}
	h, stop, err := startKubeHub(ctx, assets)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintln(out, "hub: kube-apiserver", h.version, "with a controller-runtime manager")
	return story(ctx, out, h)
}

// story is the platform team's afternoon.
func story(ctx context.Context, out io.Writer, h hub) error {
	c := h.client()
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNS}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: demoNS, Name: "podinfo-values"}, Data: map[string]string{"values.yaml": "ui: {message: hello}\n"}},
		demoRelease("podinfo", "  valuesFrom: [{kind: ConfigMap, name: podinfo-values}]\n"),
		demoRelease("frontend", "  dependsOn: [{name: backend}]\n"),
	} {
		if err := c.Create(ctx, obj); err != nil && !isAlreadyExists(err) {
			return err
		}
	}
	ready := func(rev int) func(*release.Release) bool {
		return func(r *release.Release) bool {
			return r.IsReady() && len(r.Status.History) > 0 && r.Status.History[0].Version == rev
		}
	}
	waiting := func(r *release.Release) bool {
		c := r.Status.GetCondition(release.ConditionReady)
		return c != nil && c.Reason == release.ReasonDependencyNotReady
	}
	if err := h.settle(ctx, ready(1), "podinfo"); err != nil {
		return err
	}
	if err := h.settle(ctx, waiting, "frontend"); err != nil {
		return err
	}
	if err := show(ctx, out, c, "podinfo", "frontend"); err != nil {
		return err
	}

	fmt.Fprintln(out, "-- the team changes ConfigMap apps/podinfo-values")
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: "podinfo-values"}, cm); err != nil {
		return err
	}
	cm.Data["values.yaml"] = "ui: {message: bonjour}\n"
	if err := c.Update(ctx, cm); err != nil {
		return err
	}
	if err := h.settle(ctx, ready(2), "podinfo"); err != nil {
		return err
	}
	if err := show(ctx, out, c, "podinfo"); err != nil {
		return err
	}

	fmt.Fprintln(out, "-- the team adds apps/backend, which frontend depends on")
	if err := c.Create(ctx, demoRelease("backend", "")); err != nil {
		return err
	}
	if err := h.settle(ctx, ready(1), "backend", "frontend"); err != nil {
		return err
	}
	return show(ctx, out, c, "backend", "frontend")
}

// show prints each release's Ready condition and Helm revision.
func show(ctx context.Context, out io.Writer, c client.Client, names ...string) error {
	for _, name := range names {
		r := &release.Release{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, r); err != nil {
			return err
		}
		cond := r.Status.GetCondition(release.ConditionReady)
		if cond == nil {
			return fmt.Errorf("release %s/%s has no Ready condition", demoNS, name)
		}
		rev := "-"
		if len(r.Status.History) > 0 {
			rev = fmt.Sprint(r.Status.History[0].Version)
		}
		fmt.Fprintf(out, "%s/%s: Ready=%s %s (revision %s, observedGeneration %d): %s\n",
			demoNS, name, cond.Status, cond.Reason, rev, r.Status.ObservedGeneration, cond.Message)
	}
	return nil
}

// kubeAssets is the directory of envtest's binaries (kube-apiserver and
// etcd): $KUBEBUILDER_ASSETS, as setup-envtest prints it, or
// $HELMFLEET_KUBE_BIN.
func kubeAssets() (string, error) {
	for _, env := range []string{"KUBEBUILDER_ASSETS", "HELMFLEET_KUBE_BIN"} {
		dir := os.Getenv(env)
		if dir == "" {
			continue
		}
		for _, bin := range []string{"kube-apiserver", "etcd"} {
			if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
				return "", fmt.Errorf("$%s: %w", env, err)
			}
		}
		return dir, nil
	}
	return "", errors.New("set KUBEBUILDER_ASSETS to a directory with kube-apiserver and etcd (setup-envtest use -p path)")
}

// kubeHub is a kube-apiserver started by envtest, with the CRDs and a
// running manager.
type kubeHub struct {
	c       client.Client
	version string
}

func startKubeHub(ctx context.Context, assets string) (_ *kubeHub, stop func(), err error) {
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, err
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	stop = func() {
		cancel()
		<-done
		_ = env.Stop()
	}
	defer func() {
		if err != nil { // the manager is not running yet
			cancel()
			_ = env.Stop()
		}
	}()
	c, err := client.New(cfg, client.Options{Scheme: demoScheme()})
	if err != nil {
		return nil, nil, err
	}
	if err := installCRDs(ctx, c); err != nil {
		return nil, nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return nil, nil, err
	}
	// Quiet: logr.Discard() would make the manager fall back to its
	// global logger.
	quiet := funcr.New(func(string, string) {}, funcr.Options{})
	mgr, err := newManager(mctx, cfg, options{MetricsAddr: "0", Log: &quiet})
	if err != nil {
		return nil, nil, err
	}
	go func() { done <- mgr.Start(mctx) }()
	return &kubeHub{c: c, version: v.GitVersion}, stop, nil
}

func (k *kubeHub) client() client.Client { return k.c }

// settle polls the statuses the manager writes; the manager itself
// reacts to watch events, not to this loop.
func (k *kubeHub) settle(ctx context.Context, want func(*release.Release) bool, names ...string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, name := range names {
		for {
			r := &release.Release{}
			if err := k.c.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, r); err == nil && want(r) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("release %s/%s did not settle: %w", demoNS, name, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// installCRDs installs the HelmRelease CRD of release/crds and waits until
// it is served.
func installCRDs(ctx context.Context, c client.Client) error {
	data, err := fs.ReadFile(crds.FS(), "helm.toolkit.fluxcd.io_helmreleases.yaml")
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		return err
	}
	if err := c.Create(ctx, u); err != nil && !isAlreadyExists(err) {
		return err
	}
	for i := 0; ; i++ {
		err := c.List(ctx, &release.ReleaseList{})
		if err == nil {
			return nil
		}
		if i == 300 {
			return fmt.Errorf("HelmRelease CRD not served: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// memoryHub is the reconciler over controller-runtime's fake client, with
// an in-memory cluster as the release target.
type memoryHub struct{ env *controllertest.Env }

func newMemoryHub() (*memoryHub, error) {
	env, err := controllertest.NewEnv(controller.Config{Charts: charts}, fleettest.Member{})
	return &memoryHub{env: env}, err
}

func (m *memoryHub) client() client.Client { return m.env.Client }

// settle reconciles the named releases in order, once each, as the
// manager's watches would after the change, and checks the result.
func (m *memoryHub) settle(ctx context.Context, want func(*release.Release) bool, names ...string) error {
	for _, name := range names {
		_, r, err := m.env.Reconcile(ctx, demoNS, name)
		if err != nil {
			return err
		}
		if !want(r) {
			return fmt.Errorf("release %s/%s: unexpected status %+v", demoNS, name, r.Status.Conditions)
		}
	}
	return nil
}

func demoScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(s), controller.AddToScheme(s)); err != nil {
		panic(err) // registering known types does not fail
	}
	return s
}

func isAlreadyExists(err error) bool { return client.IgnoreAlreadyExists(err) == nil }

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
