package integration

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/controller"
	"github.com/helmfleet/helmfleet/release/crds"
	"github.com/helmfleet/helmfleet/release/kube"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// benchChart is the release every sub-benchmark installs: the test chart
// (Deployment, ConfigMap, Secret, Ingress) without its Service, and six
// more ConfigMaps: ten objects. Not the Service: the harness's service
// range (10.0.0.0/24) has room for 254 cluster IPs, and a thousand
// releases live at once.
func benchChart() *chart.Chart {
	ch := testchart.Grown(6)
	ch.Templates = slices.DeleteFunc(ch.Templates, func(f *chart.File) bool { return f.Name == "templates/service.yaml" })
	return ch
}

// EnvBenchConcurrency, when set, is the controller's
// MaxConcurrentReconciles in BenchmarkControllerThroughput instead of its
// default: to profile the option.
const EnvBenchConcurrency = "HELMFLEET_BENCH_CONCURRENCY"

// BenchmarkControllerThroughput installs b.N small releases (benchChart:
// ten objects, waits off) on the hub three ways, each in a namespace of its own:
//
//   - controller: b.N HelmReleases created on the hub while
//     release/controller runs in a manager in this process; timed from
//     the first create until all are Ready at their generation. The
//     manager's config has Flux's rate limits (kube.DefaultQPS,
//     kube.DefaultBurst), as doc.go tells a user to set; the controller's
//     options are its defaults.
//   - helm-default-limits: Helm SDK action.Install of the same releases one
//     at a time, over a plain rest.Config (no QPS or Burst: client-go's 5
//     and 10), what a program gets from a kubeconfig.
//   - helm-unlimited: the same with the client rate limit lifted (QPS -1).
//
// ns/op is the time per release; releases/s the throughput. heap-MB is
// the peak of the process's HeapInuse (sampled every 100 ms) over its
// value after a GC before the run; rss-hwm-MB the growth of the process's
// peak RSS (VmHWM) during the run: the controller's memory is the
// controller sub-benchmark's (it runs first; the process also holds the
// benchmark's client and waiter, a small part).
//
// The count is b.N: run it with -benchtime=<N>x, e.g.
//
//	HELMFLEET_INTEGRATION=1 HELMFLEET_KUBE_BIN=… go test -run '^$' \
//	  -bench ControllerThroughput -benchtime 1000x -timeout 3h ./internal/integration/
func BenchmarkControllerThroughput(b *testing.B) {
	if harness == nil {
		b.Skip(skipReason)
	}
	// The manager logs to logr.Discard; this silences controller-runtime's
	// warning that its global logger was never set.
	ctrllog.SetLogger(logr.Discard())
	hub := harness.Cluster("hub")
	if hub == nil {
		b.Fatal("no hub control plane")
	}
	// The benchmark's own client (creates, waits, clean-ups) is not
	// throttled: it must not be what is measured.
	fast := rest.CopyConfig(hub.Admin)
	fast.QPS, fast.Burst = -1, 0
	c, err := client.New(fast, client.Options{Scheme: benchScheme(b)})
	if err != nil {
		b.Fatal(err)
	}
	benchInstallReleaseCRD(b, c)

	var seq int
	namespace := func(b *testing.B, kind string) string {
		b.Helper()
		seq++
		ns := fmt.Sprintf("bench-%s-%d-%d", kind, b.N, seq)
		if err := c.Create(benchCtx(b), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { benchCleanNamespace(b, c, ns) })
		return ns
	}

	b.Run("controller", func(b *testing.B) {
		ns := namespace(b, "controller")
		mgrCfg := rest.CopyConfig(hub.Admin)
		mgrCfg.QPS, mgrCfg.Burst = kube.DefaultQPS, kube.DefaultBurst
		reqs := countRequests(mgrCfg)
		ccfg := controller.Config{Charts: benchCharts(), Name: "helmfleet-bench", Metrics: benchMetrics(b)}
		if v := os.Getenv(EnvBenchConcurrency); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				b.Fatalf("%s=%q: %v", EnvBenchConcurrency, v, err)
			}
			ccfg.MaxConcurrentReconciles = n
		}
		mgr, stop := benchManager(b, mgrCfg, ccfg)
		defer stop()
		rels := make([]*release.Release, b.N)
		for i := range rels {
			rels[i] = benchRelease(b, ns, benchReleaseName(i))
		}
		mem := startMemSampler()
		b.ResetTimer()
		createAll(b, c, rels)
		waitAllReady(b, mgr.GetCache(), ns, b.N)
		b.StopTimer()
		mem.report(b)
		reqs.report(b)
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "releases/s")
	})

	helm := func(limits func(*rest.Config)) func(b *testing.B) {
		return func(b *testing.B) {
			ns := namespace(b, "helm")
			cfg := rest.CopyConfig(hub.Admin)
			cfg.QPS, cfg.Burst = 0, 0
			limits(cfg)
			reqs := countRequests(cfg)
			ac := new(action.Configuration)
			if err := ac.Init(kube.NewRESTConfigGetter(cfg, ns), ns, "secret", func(string, ...any) {}); err != nil {
				b.Fatal(err)
			}
			ctx := benchCtx(b)
			mem := startMemSampler()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				in := action.NewInstall(ac)
				in.ReleaseName, in.Namespace, in.Timeout = benchReleaseName(i), ns, 5*time.Minute
				if _, err := in.RunWithContext(ctx, benchChart(), nil); err != nil {
					b.Fatalf("install %s: %v", in.ReleaseName, err)
				}
			}
			b.StopTimer()
			mem.report(b)
			reqs.report(b)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "releases/s")
		}
	}
	b.Run("helm-default-limits", helm(func(*rest.Config) {}))
	b.Run("helm-unlimited", helm(func(cfg *rest.Config) { cfg.QPS = -1 }))
}

func benchReleaseName(i int) string { return fmt.Sprintf("r-%04d", i) }

// benchCharts serves a fresh copy of benchChart to each
// reconcile, as the Helm baselines load one for each install.
func benchCharts() reconcile.ChartGetter {
	return reconcile.ChartGetterFunc(func(context.Context, *release.Release) (*reconcile.Chart, error) {
		return &reconcile.Chart{Chart: benchChart()}, nil
	})
}

func benchRelease(b *testing.B, ns, name string) *release.Release {
	b.Helper()
	rel := &release.Release{}
	if err := yaml.UnmarshalStrict([]byte(controllerRelease(ns, name, "")), rel); err != nil {
		b.Fatal(err)
	}
	return rel
}

func benchScheme(b *testing.B) *k8sruntime.Scheme {
	b.Helper()
	s := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	if err := controller.AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	return s
}

func benchMetrics(b *testing.B) *controller.Metrics {
	b.Helper()
	m, err := controller.NewMetrics(nil)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

func benchCtx(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(b.Context(), 3*time.Hour)
	b.Cleanup(cancel)
	return ctx
}

// benchManager starts a manager on cfg with the HelmRelease controller of
// ccfg and waits for its cache; stop stops it and waits.
func benchManager(b *testing.B, cfg *rest.Config, ccfg controller.Config) (ctrl.Manager, func()) {
	b.Helper()
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 benchScheme(b),
		Logger:                 logr.Discard(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := controller.Setup(b.Context(), mgr, ccfg); err != nil {
		b.Fatal(err)
	}
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	sctx, scancel := context.WithTimeout(b.Context(), time.Minute)
	defer scancel()
	if !mgr.GetCache().WaitForCacheSync(sctx) {
		cancel()
		b.Fatal("manager cache did not sync")
	}
	var once sync.Once
	return mgr, func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					b.Errorf("manager: %v", err)
				}
			case <-time.After(30 * time.Second):
				b.Error("manager did not stop")
			}
		})
	}
}

// createAll creates rels with a few writers at once, as a kubectl apply
// of many files or a GitOps sync would.
func createAll(b *testing.B, c client.Client, rels []*release.Release) {
	b.Helper()
	ctx := benchCtx(b)
	work := make(chan *release.Release)
	errs := make(chan error, len(rels))
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rel := range work {
				if err := c.Create(ctx, rel); err != nil {
					errs <- fmt.Errorf("create HelmRelease %s/%s: %w", rel.Namespace, rel.Name, err)
				}
			}
		}()
	}
	for _, rel := range rels {
		work <- rel
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// waitAllReady waits until n HelmReleases of ns are Ready at their
// generation, reading the manager's cache (no load on the API server).
func waitAllReady(b *testing.B, cache client.Reader, ns string, n int) {
	b.Helper()
	ctx := benchCtx(b)
	deadline := time.Now().Add(2*time.Minute + time.Duration(n)*2*time.Second)
	for {
		var list release.ReleaseList
		if err := cache.List(ctx, &list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			b.Fatal(err)
		}
		ready := 0
		var notReady []string
		for i := range list.Items {
			rel := &list.Items[i]
			if rel.Status.ObservedGeneration == rel.Generation && rel.IsReady() {
				ready++
			} else if len(notReady) < 5 {
				notReady = append(notReady, fmt.Sprintf("%s: %s", rel.Name, condStr(rel.Status, release.ConditionReady)))
			}
		}
		if ready == n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d HelmReleases ready; some not: %v", ready, n, notReady)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// requestCounter counts the requests of the clients built from a config.
type requestCounter struct {
	n atomic.Int64

	mu    sync.Mutex
	kinds map[string]int // "GET secrets", …
}

// countRequests makes the clients built from cfg count their requests.
func countRequests(cfg *rest.Config) *requestCounter {
	c := &requestCounter{kinds: map[string]int{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			c.n.Add(1)
			c.mu.Lock()
			c.kinds[req.Method+" "+requestResource(req.URL.Path)]++
			c.mu.Unlock()
			return rt.RoundTrip(req)
		})
	})
	return c
}

// report reports the requests a release made (the controller's include
// its watches' set-up, before the timer, and its events).
func (c *requestCounter) report(b *testing.B) {
	b.ReportMetric(float64(c.n.Load())/float64(b.N), "requests/release")
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.kinds))
	for k := range c.kinds {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return c.kinds[keys[i]] > c.kinds[keys[j]] })
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, " %s=%.2f", k, float64(c.kinds[k])/float64(b.N))
	}
	b.Logf("requests per release:%s", sb.String())
}

// requestResource is the resource of an API path (/api/v1/namespaces/x/secrets/y
// → secrets, …/status → secrets/status), or the path's first two parts.
func requestResource(p string) string {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "namespaces" {
			rest := parts[i+2:]
			if len(rest) >= 3 {
				return rest[0] + "/" + rest[2]
			}
			return rest[0]
		}
	}
	if len(parts) > 3 {
		parts = parts[:3]
	}
	return strings.Join(parts, "/")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// memSampler records the peak HeapInuse of the process while it runs.
type memSampler struct {
	stop      chan struct{}
	done      chan struct{}
	baseHeap  uint64
	peakHeap  uint64
	baseHWMkB uint64
}

func startMemSampler() *memSampler {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := &memSampler{stop: make(chan struct{}), done: make(chan struct{}), baseHeap: ms.HeapInuse, peakHeap: ms.HeapInuse, baseHWMkB: vmHWMkB()}
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				runtime.ReadMemStats(&ms)
				s.peakHeap = max(s.peakHeap, ms.HeapInuse)
			}
		}
	}()
	return s
}

// report stops the sampler and reports heap-MB and rss-hwm-MB.
func (s *memSampler) report(b *testing.B) {
	close(s.stop)
	<-s.done
	const mb = 1 << 20
	b.ReportMetric(float64(s.peakHeap-s.baseHeap)/mb, "heap-MB")
	if hwm := vmHWMkB(); hwm > 0 {
		b.ReportMetric(float64(hwm-s.baseHWMkB)/1024, "rss-hwm-MB")
	}
}

// vmHWMkB is the process's peak resident set size in kB, 0 where
// /proc/self/status does not say.
func vmHWMkB() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// benchInstallReleaseCRD installs the HelmRelease CRD unless it is there
// and waits until it is served; it leaves it for the process's end.
func benchInstallReleaseCRD(b *testing.B, c client.Client) {
	b.Helper()
	data, err := fs.ReadFile(crds.FS(), "helm.toolkit.fluxcd.io_helmreleases.yaml")
	if err != nil {
		b.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		b.Fatal(err)
	}
	if err := client.IgnoreAlreadyExists(c.Create(benchCtx(b), crd)); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if c.List(benchCtx(b), &release.ReleaseList{}) == nil {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("HelmRelease CRD not served after 30s")
		}
	}
}

// benchCleanNamespace deletes what a sub-benchmark left in ns (its
// HelmReleases, their finalizers let go, and the chart's objects and
// Helm's release Secrets), so the next one starts on the same store. The
// namespace itself stays: the harness runs no namespace controller.
func benchCleanNamespace(b *testing.B, c client.Client, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var list release.ReleaseList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		b.Logf("clean %s: %v", ns, err)
	}
	var wg sync.WaitGroup
	work := make(chan *release.Release)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rel := range work {
				patch := client.MergeFrom(rel.DeepCopy())
				rel.Finalizers = nil
				_ = c.Patch(ctx, rel, patch)
			}
		}()
	}
	for i := range list.Items {
		if len(list.Items[i].Finalizers) > 0 {
			work <- &list.Items[i]
		}
	}
	close(work)
	wg.Wait()
	for _, obj := range []client.Object{&release.Release{}, &appsv1.Deployment{}, &networkingv1.Ingress{}, &corev1.ConfigMap{}, &corev1.Secret{}} {
		if err := c.DeleteAllOf(ctx, obj, client.InNamespace(ns)); err != nil {
			b.Logf("clean %s: delete %T: %v", ns, obj, err)
		}
	}
	var svcs corev1.ServiceList
	if err := c.List(ctx, &svcs, client.InNamespace(ns)); err == nil {
		for i := range svcs.Items {
			_ = c.Delete(ctx, &svcs.Items[i])
		}
	}
}
