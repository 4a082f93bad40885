package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	jsonpatch "github.com/evanphx/json-patch"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/release"
)

// Health is what the scripted readiness of an object says at one moment.
type Health struct {
	// Ready means the object reached its desired state (a Deployment is
	// available, a Job or test Pod completed).
	Ready bool
	// Failed means it never will (a Job or hook Pod failed).
	Failed bool
	// Message says why it is not ready or failed.
	Message string
}

// HealthFunc decides the health of a stored object. It is called while
// Helm waits and whenever Get or List read an object, so a func that
// returns not-ready for some time and then ready models a slow rollout.
// Get and List show the health as the status a controller would write
// (Deployment replicas and conditions, Job and Pod phases, a LoadBalancer's
// ingress address, an APIService's Available condition, a Ready or Stalled
// condition for other kinds), so kstatus reads it as on a real cluster —
// which also means it judges a LoadBalancer by its cluster IP alone and an
// APIService always Current, as it does there. A panic of the func is
// contained: the object reads as Failed, with the panic (a
// *release.CallbackPanicError's text) as its message.
type HealthFunc func(obj *unstructured.Unstructured) Health

// AlwaysReady is the default HealthFunc: every object is ready at once.
func AlwaysReady(*unstructured.Unstructured) Health { return Health{Ready: true} }

// Option configures a Cluster.
type Option func(*Cluster)

// WithClock sets the clock that stamps creation times (default time.Now).
func WithClock(now func() time.Time) Option { return func(c *Cluster) { c.now = now } }

// WithHealth sets how objects become ready (default AlwaysReady).
func WithHealth(h HealthFunc) Option { return func(c *Cluster) { c.health = h } }

// WithPollInterval sets how often waits re-check health (default 5ms).
func WithPollInterval(d time.Duration) Option { return func(c *Cluster) { c.poll = d } }

// WithKubeVersion sets the Kubernetes version the cluster runs: what
// charts see as .Capabilities.KubeVersion and their kubeVersion
// constraint is checked against, as "v1.29.4" or "1.29" (default
// DefaultKubeVersion(), the release of the k8s.io libraries the binary is
// built with; empty keeps it). It changes no kind the cluster serves. A
// version that does not parse fails HelmConfig and Capabilities.
func WithKubeVersion(version string) Option {
	return func(c *Cluster) {
		if version != "" {
			c.kubeVersion = version
		}
	}
}

// WithAPIVersions adds API versions the cluster reports as served besides
// its own kinds, in the forms of Helm's --api-versions: "group/version"
// or "group/version/Kind" ("v1" and "v1/Kind" for the core group). Charts
// see them in .Capabilities.APIVersions, in plans (Capabilities) and in
// Helm's own actions (HelmConfig's discovery) alike, as on a cluster that
// serves them; the cluster stores no object of them all the same (a kind
// still needs its CustomResourceDefinition). Use it to plan offline for a
// cluster that has APIs the in-memory one lacks. An entry that does not
// parse fails HelmConfig and Capabilities.
func WithAPIVersions(extra ...string) Option {
	return func(c *Cluster) { c.apiVersions = append(c.apiVersions, extra...) }
}

// Cluster is an in-memory Kubernetes cluster for Helm: Helm's real action
// code runs over Helm's memory storage driver and an object store that
// keeps objects as an API server does (uid, resourceVersion, generation,
// managedFields with real server-side apply semantics). It implements
// release.Cluster. All methods are safe for concurrent use.
type Cluster struct {
	name        string
	store       *store
	schemas     *Schemas
	now         func() time.Time
	poll        time.Duration
	kubeVersion string
	apiVersions []string

	mu          sync.Mutex
	health      HealthFunc
	unreachable error
	faults      Fault
	drivers     map[string]*driver.Memory
	as          impersonations
}

var (
	_ release.Cluster = (*Cluster)(nil)
	_ release.Patcher = (*Cluster)(nil)
)

// New returns an empty in-memory cluster called name.
func New(name string, opts ...Option) *Cluster {
	c := &Cluster{name: name, now: time.Now, poll: 5 * time.Millisecond, health: AlwaysReady, drivers: map[string]*driver.Memory{}, kubeVersion: DefaultKubeVersion()}
	for _, o := range opts {
		o(c)
	}
	c.store = newStore(name, c.now, c.schemas)
	return c
}

// Name returns the cluster's name.
func (c *Cluster) Name() string { return c.name }

// SetHealth replaces the scripted readiness; nil restores AlwaysReady.
func (c *Cluster) SetHealth(h HealthFunc) {
	if h == nil {
		h = AlwaysReady
	}
	c.mu.Lock()
	c.health = h
	c.mu.Unlock()
}

// SetUnreachable makes every call fail with err (nil makes the cluster
// reachable again), as a member whose API server went away.
func (c *Cluster) SetUnreachable(err error) {
	c.mu.Lock()
	c.unreachable = err
	c.mu.Unlock()
}

func (c *Cluster) reachable() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unreachable != nil {
		return fmt.Errorf("cluster %s unreachable: %w", c.name, c.unreachable)
	}
	return nil
}

func (c *Cluster) healthOf(obj *unstructured.Unstructured) Health {
	c.mu.Lock()
	h := c.health
	c.mu.Unlock()
	var out Health
	if err := release.Contain("memory.HealthFunc", func() error {
		out = h(obj)
		return nil
	}); err != nil {
		return Health{Failed: true, Message: err.Error()}
	}
	return out
}

// Storage returns Helm's storage of namespace, for tests that inspect or
// tamper with release records directly (a crash that left a release
// pending, a rollback target that is gone).
func (c *Cluster) Storage(namespace string) *storage.Storage {
	return storage.Init(c.driver(namespace))
}

func (c *Cluster) driver(namespace string) *driver.Memory {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.drivers[namespace]
	if !ok {
		d = driver.NewMemory()
		d.SetNamespace(namespace)
		c.drivers[namespace] = d
	}
	return d
}

// HelmConfig returns Helm's action configuration for scope: the memory
// driver of scope.StorageNamespace (one per namespace, kept for the life
// of the cluster), a kube client over the object store whose default
// namespace is scope.Namespace, and a RESTClientGetter through which Helm
// discovers the cluster as it would a real one: Capabilities is left nil,
// so Helm asks discovery when it renders, after it created a chart's CRDs,
// and templates see their API versions on the first install; lookup reads
// the stored objects.
func (c *Cluster) HelmConfig(ctx context.Context, scope release.HelmScope) (*action.Configuration, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.reachable(); err != nil {
		return nil, err
	}
	if scope.StorageNamespace == "" {
		return nil, fmt.Errorf("cluster %s: helm scope: storage namespace is empty", c.name)
	}
	ns := scope.Namespace
	if ns == "" {
		ns = scope.StorageNamespace
	}
	// What would fail Helm's discovery fails here, before any action.
	if _, err := c.kubeVersionOf(); err != nil {
		return nil, err
	}
	for _, v := range c.apiVersions {
		if _, _, err := parseAPIVersion(v); err != nil {
			return nil, fmt.Errorf("cluster %s: %w", c.name, err)
		}
	}
	return &action.Configuration{
		Releases:         storage.Init(&faultDriver{Driver: c.driver(scope.StorageNamespace), c: c, namespace: scope.StorageNamespace}),
		KubeClient:       &kubeClient{c: c, namespace: ns},
		RESTClientGetter: restClientGetter{c: c},
		Log:              func(string, ...any) {},
	}, nil
}

// Get returns one object, or a *release.NotFoundError.
func (c *Cluster) Get(ctx context.Context, ref release.ObjectRef) (*unstructured.Unstructured, error) {
	if err := c.check(ctx, OpGet, ref); err != nil {
		return nil, err
	}
	obj, err := c.store.lookup(ref.GroupVersionKind, ref.Namespace, ref.Name)
	if err != nil {
		return nil, c.wrap(ref, err)
	}
	if obj == nil {
		return nil, &release.NotFoundError{Cluster: c.name, Object: ref}
	}
	return withStatus(obj, c.healthOf(obj)), nil
}

// List returns the objects of gvk in namespace ("" = all) matching
// selector (nil = all), sorted by namespace and name.
func (c *Cluster) List(ctx context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]*unstructured.Unstructured, error) {
	if err := c.check(ctx, OpList, release.ObjectRef{GroupVersionKind: gvk, Namespace: namespace}); err != nil {
		return nil, err
	}
	objs, err := c.store.list(gvk, namespace, selector)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: list %s: %w", c.name, gvk.Kind, err)
	}
	for i, o := range objs {
		objs[i] = withStatus(o, c.healthOf(o))
	}
	return objs, nil
}

// Apply server-side applies obj with Kubernetes' own field manager, so
// ownership, conflicts and managedFields are those of a real API server.
// With opts.DiscardResult it returns nil for the stored object (errors are
// the same), and saves copying it.
func (c *Cluster) Apply(ctx context.Context, obj *unstructured.Unstructured, opts release.ApplyOptions) (*unstructured.Unstructured, error) {
	ref := release.RefOf(obj)
	if err := c.check(ctx, OpApply, ref); err != nil {
		return nil, err
	}
	if opts.FieldManager == "" {
		return nil, fmt.Errorf("cluster %s: apply %s: field manager is required", c.name, ref)
	}
	out, err := c.store.apply(obj, opts)
	return out, c.wrap(ref, err)
}

// Delete removes one object and what it owns (unless propagation is
// Orphan), or returns a *release.NotFoundError.
func (c *Cluster) Delete(ctx context.Context, ref release.ObjectRef, opts release.DeleteOptions) error {
	if err := c.check(ctx, OpDelete, ref); err != nil {
		return err
	}
	return c.wrap(ref, c.store.remove(ref.GroupVersionKind, ref.Namespace, ref.Name, opts.Propagation))
}

// Patch applies an RFC 6902 JSON patch to one object as an Update by
// opts.FieldManager (what kubectl patch --type=json does).
func (c *Cluster) Patch(ctx context.Context, ref release.ObjectRef, jsonPatch []byte, opts release.PatchOptions) (*unstructured.Unstructured, error) {
	if err := c.check(ctx, OpPatch, ref); err != nil {
		return nil, err
	}
	p, err := jsonpatch.DecodePatch(jsonPatch)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: patch %s: %w", c.name, ref, err)
	}
	live, err := c.store.get(ref.GroupVersionKind, ref.Namespace, ref.Name)
	if err != nil {
		return nil, c.wrap(ref, err)
	}
	doc, err := json.Marshal(live.Object)
	if err != nil {
		return nil, err
	}
	if doc, err = p.Apply(doc); err != nil {
		return nil, fmt.Errorf("cluster %s: patch %s: %w", c.name, ref, err)
	}
	next := &unstructured.Unstructured{}
	if err := next.UnmarshalJSON(doc); err != nil {
		return nil, fmt.Errorf("cluster %s: patch %s: %w", c.name, ref, err)
	}
	manager := opts.FieldManager
	if manager == "" {
		manager = "helmfleet"
	}
	out, err := c.store.update(next, manager)
	return out, c.wrap(ref, err)
}

// Update writes obj as manager with an Update operation (what kubectl edit
// or a controller does), creating it if absent. Tests use it to make
// drift "by another manager".
func (c *Cluster) Update(ctx context.Context, obj *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	if err := c.check(ctx, OpUpdate, release.RefOf(obj)); err != nil {
		return nil, err
	}
	out, err := c.store.update(obj, manager)
	return out, c.wrap(release.RefOf(obj), err)
}

// Objects returns a copy of every stored object as stored (without the
// status the simulated controllers add on Get and List), sorted by group,
// kind, namespace and name.
func (c *Cluster) Objects() []*unstructured.Unstructured { return c.store.all() }

// Summary returns one line per stored object, "Kind namespace/name", in
// Objects order; handy in examples and test failure messages.
func (c *Cluster) Summary() []string {
	objs := c.Objects()
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		id := o.GetName()
		if o.GetNamespace() != "" {
			id = o.GetNamespace() + "/" + id
		}
		out = append(out, o.GetKind()+" "+id)
	}
	sort.Strings(out)
	return out
}

func (c *Cluster) check(ctx context.Context, op Operation, ref release.ObjectRef) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cluster %s: %w", c.name, err)
	}
	if err := c.reachable(); err != nil {
		return err
	}
	return c.fault(op, ref)
}

// wrap turns the store's API errors into the release package's typed ones.
func (c *Cluster) wrap(ref release.ObjectRef, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case apierrors.IsNotFound(err):
		return &release.NotFoundError{Cluster: c.name, Object: ref}
	case apierrors.IsConflict(err):
		return conflictError(c.name, ref, err)
	}
	return fmt.Errorf("cluster %s: %s: %w", c.name, ref, err)
}

// conflictError reads the managers and paths out of an apply conflict.
func conflictError(cluster string, ref release.ObjectRef, err error) error {
	ce := &release.ConflictError{Cluster: cluster, Object: ref, Err: err}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, cause := range status.Status().Details.Causes {
			manager := strings.TrimPrefix(cause.Message, "conflict with ")
			if i := strings.IndexAny(manager, ":"); i >= 0 {
				manager = manager[:i]
			}
			ce.Conflicts = append(ce.Conflicts, release.FieldConflict{Manager: strings.Trim(manager, `"`), Path: cause.Field})
		}
	}
	sort.Slice(ce.Conflicts, func(i, j int) bool { return ce.Conflicts[i].Path < ce.Conflicts[j].Path })
	return ce
}
