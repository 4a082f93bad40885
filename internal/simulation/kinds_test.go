package simulation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing/fstest"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/depgraph"
	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/controller"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// The second track of a schedule: the controller in one-cluster mode
// ("web" on cluster ctl) and in fleet mode ("fl" on members f1 and f2,
// its inventory in a store on chub), and a fleet of Kustomizations on
// members k1 and k2 (infra, with wait, producing the HelmRelease addon and
// a Secret whose token is substituted from each member's cluster-vars
// Secret; site, which depends on infra). Its steps and faults are drawn
// from a second stream of the seed over clusters of its own, so the first
// track of a seed replays as it did before this track existed.

const (
	webName   = "web"
	flName    = "fl"
	addonName = "addon"
	fluxNS    = "flux-system"
)

var (
	ctlMembers  = []string{"f1", "f2"}
	kustMembers = []string{"k1", "k2"}
	// kindsClusters are the second track's clusters, sorted as drawn.
	kindsClusters = []string{"ctl", "f1", "f2", "chub", "k1", "k2"}
)

const ctlPlacement = `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: fl, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: fl}
  placement:
    clusterAffinity:
      clusterNames: [f1, f2]
`

// overrideFailsOnF2 replaces a path fl lacks on f2 only: its override
// fails there.
const overrideFailsOnF2 = `
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: fl-f2, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: fl}
  overrideRules:
    - targetCluster: {clusterNames: [f2]}
      overriders:
        plaintext: [{path: /spec/nothing/here, operator: replace, value: x}]
`

const kustPlacement = `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: kust, namespace: flux-system}
spec:
  resourceSelectors:
    - {apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, name: infra}
    - {apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, name: site}
  placement:
    clusterAffinity:
      clusterNames: [k1, k2]
`

// want is what a unit's last reconcile asked a cluster to run: chart
// version and replicas (-1: nothing can be ready, its values could not
// be read).
type want struct {
	version  string
	replicas int
}

// kinds is the second track of a world.
type kinds struct {
	w   *world
	rng *rand.Rand

	mu        sync.Mutex
	withdrawn map[string]bool

	// canaries are every Secret value the track wrote; none may appear
	// in any output.
	canaries []string

	hubOne, hubFleet client.Client
	web, fl          *release.Release
	webSecret        map[string]*secretValues // "web", "fl": nil when deleted
	override         bool
	// f1Only is set while fl's placement leaves f2 out.
	f1Only bool

	one       *controller.HelmReleaseReconciler
	flr       *controller.FleetReconciler
	flStore   fleet.Store
	events    *events.FakeRecorder
	webWant   want
	flWant    want
	flMembers controller.StaticMembers
	// flPlaced are the members fl was placed on at its last reconcile.
	flPlaced []string

	// source is the Kustomizations' Git tree: nil while it is gone.
	source    *kustSource
	sourceGen int
	// revisions is what each source revision asks of addon.
	revisions map[string]want
	kustGen   int64
	kfleet    *fleet.Fleet
	kStore    fleet.Store
	kEvents   []string
	tokens    map[string]string // cluster-vars token per member

	out map[string]string // outputs of the current step
}

// secretValues is a valuesFrom Secret: its replicas and token, broken
// when its values.yaml does not parse.
type secretValues struct {
	replicas int
	token    string
	broken   bool
	// tokenReplicas sets replicaCount to the token: the chart renders it
	// where the Deployment's schema wants an integer.
	tokenReplicas bool
}

func (s *secretValues) data() string {
	if s.tokenReplicas {
		return fmt.Sprintf("replicaCount: %s\ntoken: %s\n", s.token, s.token)
	}
	if s.broken {
		return fmt.Sprintf("token: %s\nreplicaCount: [%d\n", s.token, s.replicas)
	}
	return fmt.Sprintf("replicaCount: %d\ntoken: %s\n", s.replicas, s.token)
}

type kustSource struct {
	version  string
	replicas int
	revision string
}

func newKinds(w *world) *kinds {
	k := &kinds{
		w: w, rng: rand.New(rand.NewPCG(uint64(w.seed), 0xc0a7)),
		withdrawn: map[string]bool{}, webSecret: map[string]*secretValues{},
		revisions: map[string]want{}, tokens: map[string]string{}, out: map[string]string{},
	}
	schemas := memory.NewSchemas()
	for _, name := range kindsClusters {
		w.broken[name] = k.rng.IntN(2) == 0
		c := memory.New(name, memory.WithSchemas(schemas), memory.WithClock(w.clock.Now),
			memory.WithPollInterval(time.Millisecond), memory.WithHealth(w.health(name)))
		f := &faults{}
		c.SetFaults(f.fault)
		w.clusters[name], w.faults[name] = c, f
	}
	k.hubOne, k.hubFleet = k.newHub(), k.newHub()
	k.web = k.controllerRelease(webName, 1)
	k.fl = k.controllerRelease(flName, 1)
	ctx := context.Background()
	require.NoError(w.t, k.hubOne.Create(ctx, k.web))
	require.NoError(w.t, k.hubFleet.Create(ctx, k.fl))
	u := &unstructured.Unstructured{}
	require.NoError(w.t, yaml.Unmarshal([]byte(ctlPlacement), &u.Object))
	require.NoError(w.t, k.hubFleet.Create(ctx, u))
	for _, name := range []string{webName, flName} {
		k.webSecret[name] = &secretValues{replicas: 1 + k.rng.IntN(3), token: k.canary()}
		k.writeSecret(name)
	}
	for _, m := range ctlMembers {
		k.flMembers = append(k.flMembers, release.Member{Cluster: w.clusters[m], Facts: policy.Cluster{Labels: map[string]string{"tier": "apps"}}})
	}
	store, err := fleet.NewObjectStore(w.clusters["chub"], fleet.ObjectStoreConfig{Namespace: "fleet-system", Name: "ctl"})
	require.NoError(w.t, err)
	k.flStore = store
	k.kStore, err = fleet.NewObjectStore(w.clusters["chub"], fleet.ObjectStoreConfig{Namespace: "fleet-system", Name: "kust"})
	require.NoError(w.t, err)
	k.events = events.NewFakeRecorder(10000)
	k.newControllers()
	k.kustGen = 1
	k.changeSource()
	for _, m := range kustMembers {
		k.rotateVars(m)
	}
	k.kfleet = k.newKustFleet()
	return k
}

func (k *kinds) canary() string {
	c := fmt.Sprintf("CANARY-%016x", k.rng.Uint64())
	k.canaries = append(k.canaries, c)
	return c
}

func (k *kinds) newHub() client.Client {
	s := runtime.NewScheme()
	require.NoError(k.w.t, clientgoscheme.AddToScheme(s))
	require.NoError(k.w.t, controller.AddToScheme(s))
	b := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&release.Release{})
	for field, fn := range controller.Indexers() {
		b = b.WithIndex(&release.Release{}, field, fn)
	}
	return b.Build()
}

// controllerRelease is release name of a controller, its replicas read
// from the Secret of its name.
func (k *kinds) controllerRelease(name string, gen int64) *release.Release {
	s := spec{
		version: versions[k.rng.IntN(len(versions))], installRetries: k.rng.IntN(3),
		upgradeRetries: k.rng.IntN(2), uninstall: k.rng.IntN(3) == 0,
	}
	r := newRelease(name, s, gen)
	r.Spec.Values = nil
	r.Spec.ValuesFrom = []release.ValuesReference{{Kind: "Secret", Name: name + "-values"}}
	return r
}

func (k *kinds) writeSecret(name string) {
	ctx := context.Background()
	hub := k.hubOne
	if name == flName {
		hub = k.hubFleet
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-values"}}
	err := hub.Get(ctx, client.ObjectKeyFromObject(sec), sec)
	v := k.webSecret[name]
	switch {
	case v == nil && err == nil:
		require.NoError(k.w.t, hub.Delete(ctx, sec))
	case v == nil:
	case apierrors.IsNotFound(err):
		sec.Data = map[string][]byte{"values.yaml": []byte(v.data())}
		require.NoError(k.w.t, hub.Create(ctx, sec))
	default:
		require.NoError(k.w.t, err)
		sec.Data = map[string][]byte{"values.yaml": []byte(v.data())}
		require.NoError(k.w.t, hub.Update(ctx, sec))
	}
}

// charts is charts() without the versions withdrawn now.
func (k *kinds) charts() reconcile.ChartGetter {
	all := charts()
	return reconcile.ChartGetterFunc(func(ctx context.Context, rel *release.Release) (*reconcile.Chart, error) {
		v := rel.Spec.Chart.Spec.Version
		k.mu.Lock()
		gone := k.withdrawn[v]
		k.mu.Unlock()
		if gone {
			return nil, fmt.Errorf("chart podinfo version %s: withdrawn from the repository", v)
		}
		return all.GetChart(ctx, rel)
	})
}

// newControllers are a new process's controllers: one-cluster over ctl,
// fleet over f1 and f2 with its store on chub.
func (k *kinds) newControllers() {
	ctl := k.w.clusters["ctl"]
	m, err := controller.NewMetrics(prometheus.NewRegistry())
	require.NoError(k.w.t, err)
	k.one, err = controller.New(controller.Config{
		Client: k.hubOne, REST: &rest.Config{Host: "https://ctl.test"}, Events: k.events, Metrics: m,
		Charts:     k.charts(),
		Reconciler: reconcile.Config{PollInterval: time.Millisecond, Now: k.w.clock.Now},
		NewCluster: func(string, *rest.Config) (release.Cluster, error) { return ctl, nil },
	})
	require.NoError(k.w.t, err)
	m2, err := controller.NewMetrics(prometheus.NewRegistry())
	require.NoError(k.w.t, err)
	k.flr, err = controller.NewFleet(controller.FleetConfig{
		Client: k.hubFleet, Members: k.flMembers, Charts: k.charts(), Metrics: m2, Events: k.events, Store: k.flStore,
		Reconciler: reconcile.Config{PollInterval: time.Millisecond, Now: k.w.clock.Now},
	})
	require.NoError(k.w.t, err)
}

// FS serves the Kustomizations' tree: infra (addon and its token
// Secret) and site (a ConfigMap).
func (k *kinds) FS(_ context.Context, _ *release.Kustomization) (fs.FS, string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.source
	if s == nil {
		return nil, "", fmt.Errorf("GitRepository %s/fleet: %w", fluxNS, kustomize.ErrSourceNotFound)
	}
	addon := fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: addon, namespace: apps}
spec:
  interval: 10m
  timeout: 30ms
  install: {remediation: {retries: 1}}
  chart:
    spec:
      chart: podinfo
      version: "%s"
      sourceRef: {kind: HelmRepository, name: podinfo}
  values:
    replicaCount: %d
`, s.version, s.replicas)
	return fstest.MapFS{
		"infra/kustomization.yaml": {Data: []byte("resources: [addon.yaml, token.yaml]\n")},
		"infra/addon.yaml":         {Data: []byte(addon)},
		"infra/token.yaml": {Data: []byte(`apiVersion: v1
kind: Secret
metadata: {name: addon-token, namespace: apps}
stringData:
  token: "${token}"
`)},
		"site/kustomization.yaml": {Data: []byte("resources: [site.yaml]\n")},
		"site/site.yaml": {Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: site, namespace: apps}
data: {page: "${cluster_name:=site}"}
`)},
	}, s.revision, nil
}

func (k *kinds) newKustFleet() *fleet.Fleet {
	var members []release.Member
	for _, m := range kustMembers {
		members = append(members, release.Member{Cluster: k.w.clusters[m], Facts: policy.Cluster{Labels: map[string]string{"tier": "apps"}}})
	}
	rec, err := reconcile.New(reconcile.Config{Charts: k.charts(), Now: k.w.clock.Now, PollInterval: time.Millisecond})
	require.NoError(k.w.t, err)
	f, err := fleet.New(fleet.Config{
		Members: members, Reconciler: rec, Store: k.kStore, Concurrency: 1, ClusterConcurrency: 1, Clock: k.w.clock,
		KustomizeConfig: &kustomize.ReconcilerConfig{Sources: kustomize.SourcesFunc(k.FS), PollInterval: time.Millisecond, Now: k.w.clock.Now},
		Events: func(e fleet.Event) {
			k.kEvents = append(k.kEvents, fmt.Sprintf("%+v", e))
		},
	})
	require.NoError(k.w.t, err)
	return f
}

func (k *kinds) kustomizations() []*release.Kustomization {
	var out []*release.Kustomization
	for _, name := range []string{"infra", "site"} {
		y := fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %s, namespace: flux-system, generation: %d}
spec:
  interval: 10m
  timeout: 50ms
  path: ./%s
  prune: true
  sourceRef: {kind: GitRepository, name: fleet}
  postBuild:
    substituteFrom: [{kind: Secret, name: cluster-vars}]
`, name, k.kustGen, name)
		if name == "infra" {
			y += "  wait: true\n"
		} else {
			y += "  dependsOn: [{name: infra}]\n"
		}
		objs, err := release.Decode(strings.NewReader(y))
		require.NoError(k.w.t, err)
		out = append(out, objs.Kustomizations...)
	}
	return out
}

// changeSource gives the tree a new revision asking addon for a version
// and replicas drawn.
func (k *kinds) changeSource() {
	k.sourceGen++
	s := &kustSource{version: versions[k.rng.IntN(len(versions))], replicas: 1 + k.rng.IntN(3), revision: fmt.Sprintf("main@sha1:%07x", k.sourceGen)}
	k.mu.Lock()
	k.source = s
	k.mu.Unlock()
	k.revisions[s.revision] = want{s.version, s.replicas}
	k.w.logf("kinds: source revision %s: addon %s replicas %d", s.revision, s.version, s.replicas)
}

// rotateVars writes member m's cluster-vars Secret with a new token.
func (k *kinds) rotateVars(m string) {
	tok := k.canary()
	sec := &unstructured.Unstructured{}
	sec.SetAPIVersion("v1")
	sec.SetKind("Secret")
	sec.SetNamespace(fluxNS)
	sec.SetName("cluster-vars")
	require.NoError(k.w.t, unstructured.SetNestedStringMap(sec.Object, map[string]string{"token": tok}, "stringData"))
	f := k.w.faults[m]
	f.setOff(true)
	_, err := k.w.clusters[m].Apply(context.Background(), sec, release.ApplyOptions{FieldManager: "operator", Force: true})
	f.setOff(false)
	if err != nil {
		// Unreachable: the operator's write fails too.
		k.w.logf("kinds: %s cluster-vars rotation: %v", m, err)
		return
	}
	k.tokens[m] = tok
}

// randomStep draws one step of the second track and runs it.
func (k *kinds) randomStep() {
	k.out = map[string]string{}
	switch n := k.rng.IntN(100); {
	case n < 14:
		k.reconcileOne()
	case n < 28:
		k.reconcileFleet()
	case n < 42:
		k.applyKust()
	case n < 47:
		k.respec(webName)
	case n < 52:
		k.respec(flName)
	case n < 56:
		k.changeSource()
	case n < 59:
		k.mu.Lock()
		gone := k.source != nil
		if gone {
			k.source = nil
		}
		k.mu.Unlock()
		if !gone {
			k.changeSource()
		}
		k.w.logf("kinds: source gone %v", gone)
	case n < 64:
		name := k.pickName()
		k.webSecret[name] = &secretValues{replicas: 1 + k.rng.IntN(3), token: k.canary()}
		k.writeSecret(name)
		k.w.logf("kinds: %s values rotated, replicas %d", name, k.webSecret[name].replicas)
	case n < 67:
		name := k.pickName()
		k.webSecret[name] = nil
		k.writeSecret(name)
		k.w.logf("kinds: %s values deleted", name)
	case n < 69:
		name := k.pickName()
		k.webSecret[name] = &secretValues{replicas: 1 + k.rng.IntN(3), token: k.canary(), broken: true}
		k.writeSecret(name)
		k.w.logf("kinds: %s values rotated to YAML that does not parse", name)
	case n < 70:
		name := k.pickName()
		k.webSecret[name] = &secretValues{replicas: 1, token: k.canary(), tokenReplicas: true}
		k.writeSecret(name)
		k.w.logf("kinds: %s values rotated to a replicaCount that is the token", name)
	case n < 72:
		m := kustMembers[k.rng.IntN(len(kustMembers))]
		k.rotateVars(m)
		k.w.logf("kinds: %s cluster-vars rotated", m)
	case n < 74:
		k.setOverride(!k.override)
	case n < 76:
		k.setPlacement(!k.f1Only)
	case n < 78:
		v := versions[k.rng.IntN(len(versions))]
		k.mu.Lock()
		k.withdrawn[v] = !k.withdrawn[v]
		on := k.withdrawn[v]
		k.mu.Unlock()
		k.w.logf("kinds: chart version %s withdrawn %v", v, on)
	case n < 83:
		c := k.pickCluster()
		op := faultOps[k.rng.IntN(len(faultOps))]
		f := k.w.faults[c]
		f.mu.Lock()
		f.verb = op
		f.mu.Unlock()
		k.w.logf("kinds: %s fails every %s", c, op)
	case n < 87:
		c := k.pickCluster()
		op := faultOps[k.rng.IntN(len(faultOps))]
		n := 1 + k.rng.IntN(5)
		f := k.w.faults[c]
		f.mu.Lock()
		f.nth, f.nthDesc = memory.FailNth(op, nil, n, errInjected), fmt.Sprintf("%s #%d", op, n)
		f.mu.Unlock()
		k.w.logf("kinds: %s fails its next %s #%d", c, op, n)
	case n < 89:
		c := k.pickCluster()
		k.w.clusters[c].SetUnreachable(errUnreachable)
		k.w.logf("kinds: %s unreachable", c)
	case n < 92:
		c := k.pickCluster()
		k.w.mu.Lock()
		k.w.hookFail[c] = !k.w.hookFail[c]
		on := k.w.hookFail[c]
		k.w.mu.Unlock()
		k.w.logf("kinds: %s hook fails: %v", c, on)
	case n < 97:
		c := k.pickCluster()
		k.w.faults[c].clear()
		k.w.clusters[c].SetUnreachable(nil)
		k.w.logf("kinds: %s faults cleared", c)
	default:
		k.newControllers()
		k.kfleet = k.newKustFleet()
		if err := k.kfleet.Load(context.Background()); err != nil {
			k.w.failf("4 (nothing lost after a restart)", "kustomization fleet load: %v", err)
		}
		k.w.logf("kinds: controllers and kustomization fleet restarted")
	}
}

func (k *kinds) pickName() string {
	if k.rng.IntN(2) == 0 {
		return webName
	}
	return flName
}

// pickCluster draws a cluster of the track; the stores' hub chub is left
// without faults (a copy a failed save left stale is the first track's).
func (k *kinds) pickCluster() string {
	cs := slices.DeleteFunc(slices.Clone(kindsClusters), func(c string) bool { return c == "chub" })
	return cs[k.rng.IntN(len(cs))]
}

func (k *kinds) hub(name string) client.Client {
	if name == flName {
		return k.hubFleet
	}
	return k.hubOne
}

// respec gives controller release name a new spec (a new generation).
func (k *kinds) respec(name string) {
	ctx := context.Background()
	cur := &release.Release{}
	require.NoError(k.w.t, k.hub(name).Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cur))
	next := k.controllerRelease(name, cur.Generation+1)
	cur.Spec = next.Spec
	cur.Generation = next.Generation
	require.NoError(k.w.t, k.hub(name).Update(ctx, cur))
	k.w.logf("kinds: %s spec: version %s (generation %d)", name, cur.Spec.Chart.Spec.Version, cur.Generation)
}

// placed are the members fl is placed on now.
func (k *kinds) placed() []string {
	if k.f1Only {
		return ctlMembers[:1]
	}
	return ctlMembers
}

// setPlacement places fl on f1 only (on), or on f1 and f2.
func (k *kinds) setPlacement(f1Only bool) {
	ctx := context.Background()
	u := &unstructured.Unstructured{}
	require.NoError(k.w.t, yaml.Unmarshal([]byte(ctlPlacement), &u.Object))
	require.NoError(k.w.t, k.hubFleet.Get(ctx, client.ObjectKeyFromObject(u), u))
	names := []any{"f1", "f2"}
	if f1Only {
		names = names[:1]
	}
	require.NoError(k.w.t, unstructured.SetNestedSlice(u.Object, names, "spec", "placement", "clusterAffinity", "clusterNames"))
	require.NoError(k.w.t, k.hubFleet.Update(ctx, u))
	k.f1Only = f1Only
	k.w.logf("kinds: fl placed on %v", names)
}

func (k *kinds) setOverride(on bool) {
	ctx := context.Background()
	u := &unstructured.Unstructured{}
	require.NoError(k.w.t, yaml.Unmarshal([]byte(overrideFailsOnF2), &u.Object))
	if on {
		require.NoError(k.w.t, k.hubFleet.Create(ctx, u))
	} else {
		require.NoError(k.w.t, k.hubFleet.Delete(ctx, u))
	}
	k.override = on
	k.w.logf("kinds: override failing on f2: %v", on)
}

// want is what a reconcile of controller release name asks now.
func (k *kinds) want(name string) want {
	obj := &release.Release{}
	require.NoError(k.w.t, k.hub(name).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj))
	w := want{version: obj.Spec.Chart.Spec.Version, replicas: -1}
	if v := k.webSecret[name]; v != nil && !v.broken && !v.tokenReplicas {
		w.replicas = v.replicas
	}
	return w
}

// logCtx is a context whose logger writes into the step's outputs.
func (k *kinds) logCtx(what string) context.Context {
	return ctrl.LoggerInto(context.Background(), funcr.New(func(prefix, args string) {
		k.out["log "+what] += prefix + " " + args + "\n"
	}, funcr.Options{Verbosity: 10}))
}

func (k *kinds) reconcileOne() {
	want := k.want(webName)
	res, err := k.one.Reconcile(k.logCtx("web"), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: webName}})
	k.webWant = want
	k.out["web result"] = fmt.Sprintf("%v %+v %v %+v", res, res, err, err)
	k.w.logf("kinds: controller reconcile web: requeue %s err %v; %s", res.RequeueAfter, err, conditions(k.get(webName)))
}

func (k *kinds) reconcileFleet() {
	want, placed := k.want(flName), k.placed()
	res, err := k.flr.Reconcile(k.logCtx("fl"), ctrl.Request{NamespacedName: types.NamespacedName{Name: "fleet"}})
	k.flWant, k.flPlaced = want, placed
	k.out["fl result"] = fmt.Sprintf("%v %+v %v %+v", res, res, err, err)
	k.w.logf("kinds: fleet controller reconcile: requeue %s err %v; fl %s", res.RequeueAfter, err, conditions(k.get(flName)))
}

func (k *kinds) get(name string) *release.Release {
	obj := &release.Release{}
	require.NoError(k.w.t, k.hub(name).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj))
	return obj
}

func kkey(cluster, name string) fleet.Key {
	return fleet.Key{Cluster: cluster, Namespace: fluxNS, Name: name, Kind: fleet.KindKustomization}
}

// applyKust plans and applies the Kustomizations; a dependent runs only
// after its dependency succeeded in the same apply.
func (k *kinds) applyKust() {
	ctx := k.logCtx("kustomizations")
	in := fleet.Inputs{Kustomizations: k.kustomizations(), Policies: fixture.PolicySet(k.w.t, kustPlacement)}
	plan, err := k.kfleet.Plan(ctx, in)
	if err != nil {
		k.out["plan error"] = fmt.Sprintf("%v %+v", err, err)
		k.w.logf("kinds: apply kustomizations: plan: %v", err)
		return
	}
	k.out["plan"] = fmt.Sprintf("%v %+v", plan, plan) + plan.Table() + plan.Diff()
	for _, kp := range plan.Kustomizations {
		k.out["plan kustomization "+kp.Key().String()] = fmt.Sprintf("%+v", *kp)
	}
	for _, e := range plan.Errors {
		k.out["plan errors"] += fmt.Sprintf("%v %+v\n", e, e)
	}
	if data, err := json.Marshal(plan); err == nil {
		k.out["plan JSON"] = string(data)
	}
	rep, err := k.kfleet.Apply(ctx, plan, fleet.ApplyOptions{})
	k.out["apply error"] = fmt.Sprintf("%v %+v", err, err)
	var lines []string
	if rep != nil {
		k.out["report"] = fmt.Sprintf("%v %+v", rep, rep) + rep.Table()
		if data, err := json.Marshal(rep); err == nil {
			k.out["report JSON"] = string(data)
		}
		states := map[fleet.Key]depgraph.State{}
		for _, it := range rep.Items {
			states[it.Key] = it.State
			lines = append(lines, fmt.Sprintf("%s %s %v: %v", it.Key, it.State, it.Actions, it.Err))
			k.out["item "+it.Key.String()] = fmt.Sprintf("%+v %v", it, it.Err)
		}
		for _, m := range kustMembers {
			site, ok := states[kkey(m, "site")]
			if ok && site != depgraph.Skipped && states[kkey(m, "infra")] != depgraph.Succeeded {
				k.w.failf("1 (Ready means ready)", "site on %s ran (%s) while infra, which it depends on, is %s", m, site, states[kkey(m, "infra")])
			}
		}
	}
	k.w.logf("kinds: apply kustomizations: err %v; %s", err, strings.Join(lines, "; "))
}

// check runs invariants 1 and 5 on the second track.
func (k *kinds) check() {
	web := k.get(webName)
	if web.IsReady() {
		k.checkRunning("ctl", webName, k.webWant, "controller's web Ready")
	}
	fl := k.get(flName)
	// Every member fl is placed on counts once in its Ready condition,
	// whether it failed or not.
	if c := fl.Status.GetCondition(release.ConditionReady); c != nil && strings.HasPrefix(c.Message, "ready on ") {
		var n, of int
		if _, err := fmt.Sscanf(c.Message, "ready on %d/%d members", &n, &of); err != nil || of != len(k.flPlaced) {
			k.w.failf("1 (Ready means ready)", "fleet controller's fl counts %d members, %d are placed: %s", of, len(k.flPlaced), c.Message)
		}
	}
	if fl.IsReady() {
		msg := fl.Status.GetCondition(release.ConditionReady).Message
		if !strings.HasPrefix(msg, fmt.Sprintf("ready on %d/%d members", len(k.flPlaced), len(k.flPlaced))) {
			k.w.failf("1 (Ready means ready)", "fleet controller's fl Ready but not on every member placed: %s", msg)
		}
		for _, m := range k.flPlaced {
			k.checkRunning(m, flName, k.flWant, "fleet controller's fl Ready ("+msg+")")
		}
	}
	for _, m := range kustMembers {
		st, ok := k.kfleet.KustomizationStatus(kkey(m, "infra"))
		if !ok {
			continue
		}
		if data, err := json.Marshal(st); err == nil {
			k.out["status infra "+m] = string(data)
		}
		if st.ObservedGeneration == k.kustGen && meta(st.Conditions, release.ConditionReady) {
			want, known := k.revisions[st.LastAppliedRevision]
			if !known {
				k.w.failf("1 (Ready means ready)", "infra on %s Ready at revision %q, never served", m, st.LastAppliedRevision)
			}
			k.checkRunning(m, addonName, want, "Kustomization infra (wait: true) Ready at "+st.LastAppliedRevision)
		}
		if st, ok := k.kfleet.KustomizationStatus(kkey(m, "site")); ok {
			if data, err := json.Marshal(st); err == nil {
				k.out["status site "+m] = string(data)
			}
		}
	}
	for _, r := range k.kfleet.Inventory() {
		if data, err := json.Marshal(r); err == nil {
			k.out["inventory "+r.Annotations[fleet.MemberAnnotation]+"/"+r.Name] = string(data)
		}
		if r.IsReady() {
			k.w.checkRunning(r.Annotations[fleet.MemberAnnotation], r, "kustomization fleet's copy of produced "+r.Name+" Ready")
		}
	}
	// Invariant 5: no Secret canary in any output.
	for _, name := range []string{webName, flName} {
		data, err := json.Marshal(k.get(name))
		require.NoError(k.w.t, err)
		k.out["HelmRelease "+name] = string(data)
	}
	k.out["events"] = strings.Join(k.drainEvents(), "\n")
	k.out["fleet events"] = strings.Join(k.kEvents, "\n")
	k.kEvents = nil
	names := slices.Sorted(maps.Keys(k.out))
	for _, c := range k.canaries {
		for _, form := range fixture.CanaryForms(c) {
			for _, name := range names {
				if strings.Contains(k.out[name], form) {
					k.w.failf("5 (no Secret canary in any output)", "%s holds a Secret's value (as %q)", name, form)
				}
			}
		}
	}
	k.out = map[string]string{}
}

func meta(cs []metav1.Condition, typ string) bool {
	for _, c := range cs {
		if c.Type == typ {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

func (k *kinds) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-k.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// checkRunning fails unless release name runs on cluster as want says.
func (k *kinds) checkRunning(cluster, name string, want want, why string) {
	k.w.t.Helper()
	if want.replicas < 0 {
		k.w.failf("1 (Ready means ready)", "%s on %s, though its last reconcile could not read its values", why, cluster)
	}
	r := fixture.Release()
	r.Name = name
	r.Spec.Chart.Spec.Version = want.version
	r.Spec.Values = map[string]any{"replicaCount": want.replicas}
	k.w.checkRunning(cluster, r, why)
}

// final stops the second track's faults, restores its sources and
// Secrets, and reconciles until every unit is Ready or Stalled.
func (k *kinds) final() {
	k.w.step++
	for _, c := range kindsClusters {
		k.w.faults[c].clear()
		k.w.clusters[c].SetUnreachable(nil)
	}
	k.mu.Lock()
	k.withdrawn = map[string]bool{}
	k.mu.Unlock()
	if k.override {
		k.setOverride(false)
	}
	if k.f1Only {
		k.setPlacement(false)
	}
	for _, name := range []string{webName, flName} {
		if v := k.webSecret[name]; v == nil || v.broken || v.tokenReplicas {
			k.webSecret[name] = &secretValues{replicas: 2, token: k.canary()}
			k.writeSecret(name)
		}
	}
	if k.source == nil {
		k.changeSource()
	}
	k.w.logf("kinds: final phase: every fault cleared, values and source restored")
	k.newControllers()
	for round := 1; ; round++ {
		k.out = map[string]string{}
		k.w.clock.advance(time.Minute)
		k.reconcileOne()
		k.reconcileFleet()
		k.applyKust()
		k.check()
		var open []string
		if web := k.get(webName); !settled(web) {
			open = append(open, "web: "+conditions(web))
		}
		open = append(open, k.fleetOpen()...)
		open = append(open, k.kustOpen()...)
		if len(open) == 0 {
			break
		}
		if round == finalRounds {
			k.w.failf("2 (no dead ends)", "not Ready or Stalled after %d rounds without faults: %s", finalRounds, strings.Join(open, "; "))
		}
	}
	for _, key := range []string{"ctl/" + webName, "f1/" + flName, "f2/" + flName, "k1/" + addonName, "k2/" + addonName} {
		c, name, _ := strings.Cut(key, "/")
		if _, last := k.w.latest(c, name); last != nil && last.Info.Status.IsPending() {
			k.w.failf("2 (no dead ends)", "%s left %s (revision %d)", key, last.Info.Status, last.Version)
		}
	}
}

// fleetOpen lists what keeps fl from being settled: Ready, or not Ready
// with every member copy the fleet controller's store holds Ready or
// Stalled.
func (k *kinds) fleetOpen() []string {
	fl := k.get(flName)
	// Every member fl is placed on counts once in its Ready condition,
	// whether it failed or not.
	if c := fl.Status.GetCondition(release.ConditionReady); c != nil && strings.HasPrefix(c.Message, "ready on ") {
		var n, of int
		if _, err := fmt.Sscanf(c.Message, "ready on %d/%d members", &n, &of); err != nil || of != len(ctlMembers) {
			k.w.failf("1 (Ready means ready)", "fleet controller's fl counts %d members, %d are placed: %s", of, len(ctlMembers), c.Message)
		}
	}
	if fl.IsReady() {
		return nil
	}
	f, err := fleet.New(fleet.Config{Members: k.flMembers, Reconciler: k.w.rec, Store: k.flStore})
	require.NoError(k.w.t, err)
	if err := f.Load(context.Background()); err != nil {
		return []string{"fl: load the store: " + err.Error()}
	}
	var open []string
	for _, r := range f.Inventory() {
		if !settled(r) {
			open = append(open, "fl on "+r.Annotations[fleet.MemberAnnotation]+": "+conditions(r))
		}
	}
	if len(f.Inventory()) < len(ctlMembers) {
		open = append(open, fmt.Sprintf("fl: %d member copies, want %d: %s", len(f.Inventory()), len(ctlMembers), conditions(fl)))
	}
	return open
}

// kustOpen lists the Kustomizations neither Ready nor Stalled nor held
// by a produced release that is settled.
func (k *kinds) kustOpen() []string {
	var open []string
	copies := map[string]*release.Release{}
	for _, r := range k.kfleet.Inventory() {
		m := r.Annotations[fleet.MemberAnnotation]
		copies[m] = r
		if !settled(r) {
			open = append(open, "addon on "+m+": "+conditions(r))
		}
	}
	for _, m := range kustMembers {
		for _, name := range []string{"infra", "site"} {
			st, ok := k.kfleet.KustomizationStatus(kkey(m, name))
			infra, _ := k.kfleet.KustomizationStatus(kkey(m, "infra"))
			held := copies[m] != nil && settled(copies[m]) && !copies[m].IsReady()
			switch {
			case !ok && name == "site" && !meta(infra.Conditions, release.ConditionReady) && held:
				// Never run: it waits for infra, which waits for addon,
				// which stalled.
			case !ok:
				open = append(open, name+" on "+m+": no status")
			case st.ObservedGeneration == k.kustGen && meta(st.Conditions, release.ConditionReady):
			case meta(st.Conditions, release.ConditionStalled):
			case held:
				// Waits for addon, which stalled: it says why.
			default:
				data, _ := json.Marshal(st.Conditions)
				open = append(open, name+" on "+m+": "+string(data))
			}
		}
	}
	return open
}
