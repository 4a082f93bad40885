package distribute

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/kube"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/kubernetes/scheme"
	restfake "k8s.io/client-go/rest/fake"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
)

// distClient is the Helm kube client of a Distributor's action
// configuration: Helm builds, creates, updates, waits for and deletes the
// release's objects through it, and it does all of that on the members.
type distClient struct {
	d         *Distributor
	ctx       context.Context
	namespace string
	hub       kube.Interface
	releases  driver.Driver         // the hub's storage, unobserved
	storage   string                // the namespace of the hub's records
	cfg       *action.Configuration // the configuration handed out
	pre       *preRelease           // what Helm wrote before its record

	mu       sync.Mutex
	cur      releaseID                      // the release Helm works on: the scope's, else from storage
	chart    *chart.Chart                   // its chart, for the kinds of its crds/
	recorded bool                           // Helm created a release record through this client's configuration
	hooks    map[release.ObjectRef][]string // members each hook object went to
	placed   *hookPlacement                 // the last hookSpread
}

// hookPlacement is the hook placement of one revision of a release: every
// hook of a revision is placed with the same objects, so Helm's hook
// creates of one action share it.
type hookPlacement struct {
	rel     releaseID
	version int
	sp      *spread
}

var (
	_ kube.Interface                    = (*distClient)(nil)
	_ kube.InterfaceExt                 = (*distClient)(nil)
	_ kube.InterfaceDeletionPropagation = (*distClient)(nil)
	_ release.ContextWaiter             = (*distClient)(nil)
)

// hookAnnotation marks Helm's hook objects.
const hookAnnotation = "helm.sh/hook"

// markRecorded notes that Helm created a release record: what it writes
// from now on are the release's objects and hooks.
func (k *distClient) markRecorded() {
	k.mu.Lock()
	k.recorded = true
	k.mu.Unlock()
}

func (k *distClient) isRecorded() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.recorded
}

// beforeRecord takes what Helm writes before its release record (the
// CRDs of crds/, created by Helm's install or by the Reconciler's CRD
// policy, and the Namespace of createNamespace): nothing is applied now,
// as the release's placement is not known yet; each member gets them
// with the release's first objects there. The Namespace of
// createNamespace also makes the hub hold the namespace of its release
// records (ensureHubNamespace), which Helm's storage needs there. The configuration's
// capabilities gain the CRDs' API versions, as Helm's discovery would
// after installing them. replace is true for an update (CRD policy
// CreateReplace). A create of a CRD some member already holds returns
// Helm's AlreadyExists, on which Helm's install skips it and the
// Reconciler's CreateReplace replaces it; either way the members that
// lack it get it.
func (k *distClient) beforeRecord(objs []*unstructured.Unstructured, replace bool) error {
	if err := k.pre.add(objs, replace); err != nil {
		return fmt.Errorf("distributor %s: %w", k.d.name, err)
	}
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() == namespaceGVK.GroupKind() {
			if err := k.d.ensureHubNamespace(k.ctx, k.storage, o); err != nil {
				return fmt.Errorf("distributor %s: %w", k.d.name, err)
			}
			break
		}
	}
	k.d.mapper.learn(objs)
	if caps := k.cfg.Capabilities; caps != nil {
		for _, v := range crdVersions(objs) {
			if !caps.APIVersions.Has(v) {
				caps.APIVersions = append(caps.APIVersions, v)
			}
		}
	}
	if !replace {
		if name, ok := k.d.heldAnywhere(k.ctx, objs); ok {
			return alreadyExists(name)
		}
	}
	return nil
}

// release returns the release Helm works on: the one the scope bound
// the configuration to, unless Helm works on another one's record (see
// observedDriver); without a binding, the one whose record Helm last
// wrote or read.
func (k *distClient) release() (releaseID, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cur.Name == "" {
		return releaseID{}, fmt.Errorf("distributor %s: no Helm release read or written through this configuration yet", k.d.name)
	}
	return k.cur, nil
}

func (k *distClient) check() error {
	if err := k.ctx.Err(); err != nil {
		return fmt.Errorf("distributor %s: %w", k.d.name, err)
	}
	return nil
}

// IsReachable asks the hub: members that are down fail their own part of
// each action, not the whole action before it starts.
func (k *distClient) IsReachable() error {
	if err := k.check(); err != nil {
		return err
	}
	if k.hub == nil {
		return nil
	}
	return k.hub.IsReachable()
}

// Build decodes a manifest into resource infos: unstructured objects with
// mappings from client-go's scheme, the manifest's own
// CustomResourceDefinitions and the configured RESTMapper; namespaced
// objects without a namespace get the release's namespace.
func (k *distClient) Build(reader io.Reader, _ bool) (kube.ResourceList, error) {
	data, err := io.ReadAll(reader)
	if err != nil {
		return nil, fmt.Errorf("distributor %s: read manifest: %w", k.d.name, err)
	}
	k.mu.Lock()
	c := k.chart
	k.mu.Unlock()
	objs, mappings, err := k.d.buildWith(k.ctx, string(data), k.namespace, c)
	if err != nil {
		return nil, err
	}
	out := make(kube.ResourceList, len(objs))
	for i, obj := range objs {
		out[i] = &resource.Info{
			Client: absentClient(mappings[i].GroupVersionKind.GroupVersion()), Mapping: mappings[i],
			Namespace: obj.GetNamespace(), Name: obj.GetName(), Object: obj,
		}
	}
	return out, nil
}

// buildWith builds manifest. When a kind does not map, it learns the
// kinds of c's crds/ (once per chart) and, failing that, those of the
// CRDs the members hold (one List per member: a chart whose CRD policy is
// Skip uses CRDs someone else put there), and tries again.
func (d *Distributor) buildWith(ctx context.Context, manifest, namespace string, c *chart.Chart) ([]*unstructured.Unstructured, []*meta.RESTMapping, error) {
	objs, mappings, err := d.build(strings.NewReader(manifest), namespace)
	if err == nil || !meta.IsNoMatchError(err) {
		return objs, mappings, err
	}
	if _, learned := d.mapper.learnChart(c); learned {
		if objs, mappings, err = d.build(strings.NewReader(manifest), namespace); err == nil || !meta.IsNoMatchError(err) {
			return objs, mappings, err
		}
	}
	_ = d.eachMember(ctx, nil, func(ctx context.Context, i int) error {
		crds, err := d.members[i].Cluster.List(ctx, crdGVK, "", nil)
		if err == nil {
			d.mapper.learn(crds)
		}
		return nil
	})
	return d.build(strings.NewReader(manifest), namespace)
}

// build decodes a manifest and maps its objects, setting namespace on
// namespaced objects without one and clearing it on cluster-scoped ones.
func (d *Distributor) build(reader io.Reader, namespace string) ([]*unstructured.Unstructured, []*meta.RESTMapping, error) {
	objs, err := decodeManifest(reader)
	if err != nil {
		return nil, nil, fmt.Errorf("distributor %s: %w", d.name, err)
	}
	crds := d.mapper.crdsOf(objs)
	mappings := make([]*meta.RESTMapping, len(objs))
	for i, obj := range objs {
		mapping, err := d.mapper.mapping(obj.GroupVersionKind(), crds)
		if err != nil {
			return nil, nil, fmt.Errorf("distributor %s: resource mapping not found for %s %q: %w", d.name, obj.GetKind(), obj.GetName(), err)
		}
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			if obj.GetNamespace() == "" {
				obj.SetNamespace(namespace)
			}
		} else {
			obj.SetNamespace("")
		}
		mappings[i] = mapping
	}
	return objs, mappings, nil
}

// decodeManifest reads a YAML or JSON stream of objects.
func decodeManifest(reader io.Reader) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(reader, 4096)
	for i := 0; ; i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("decode manifest document %d: %w", i, err)
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || string(raw) == "null" || string(raw) == "{}" {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("decode manifest document %d: %w", i, err)
		}
		if obj.IsList() {
			return nil, fmt.Errorf("decode manifest document %d: lists are not supported (%s)", i, obj.GetKind())
		}
		switch {
		case obj.GetAPIVersion() == "":
			return nil, fmt.Errorf("decode manifest document %d (%s %q): apiVersion is empty", i, obj.GetKind(), obj.GetName())
		case obj.GetName() == "":
			return nil, fmt.Errorf("decode manifest document %d (%s): metadata.name is empty", i, obj.GetKind())
		}
		out = append(out, obj)
	}
}

// absentClient answers every GET with 404: Helm asks whether a release's
// objects already exist (to adopt or refuse them) through the infos'
// clients, and the hub holds none of them; members are written with
// server-side apply, which creates or takes over.
func absentClient(gv schema.GroupVersion) *restfake.RESTClient {
	return &restfake.RESTClient{
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		GroupVersion:         gv,
		Client: restfake.CreateHTTPClient(func(req *http.Request) (*http.Response, error) {
			parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
			st := apierrors.NewNotFound(schema.GroupResource{Group: gv.Group, Resource: parts[max(len(parts)-2, 0)]}, parts[len(parts)-1]).Status()
			st.APIVersion, st.Kind = "v1", "Status"
			body, _ := json.Marshal(st)
			return &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{"Content-Type": []string{"application/json"}},
				Body: io.NopCloser(bytes.NewReader(body)), Request: req}, nil
		}),
	}
}

func objectsOfList(rl kube.ResourceList) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(rl))
	for _, info := range rl {
		u, ok := info.Object.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("%s %s is a %T, not built by the distributor", info.Mapping.GroupVersionKind.Kind, info.Name, info.Object)
		}
		out = append(out, u)
	}
	return out, nil
}

func isHook(rl kube.ResourceList) bool {
	for _, info := range rl {
		u, ok := info.Object.(*unstructured.Unstructured)
		if !ok || u.GetAnnotations()[hookAnnotation] == "" {
			return false
		}
	}
	return len(rl) > 0
}

// Create applies the release's objects to the members they are placed
// on, or runs hook objects on the members of the release's workloads.
func (k *distClient) Create(resources kube.ResourceList) (*kube.Result, error) {
	if err := k.check(); err != nil {
		return &kube.Result{}, err
	}
	if isHook(resources) {
		return &kube.Result{Created: resources}, k.createHooks(resources)
	}
	objs, err := objectsOfList(resources)
	if err != nil {
		return &kube.Result{}, err
	}
	if !k.isRecorded() {
		return &kube.Result{Created: resources}, k.beforeRecord(objs, false)
	}
	return &kube.Result{Created: resources}, k.spread(objs, objs)
}

// Update applies target to the members and prunes what they should no
// longer hold: objects dropped from the chart and objects no longer
// placed on a member. force changes nothing: server-side apply with
// force already takes every field the chart sets.
func (k *distClient) Update(original, target kube.ResourceList, _ bool) (*kube.Result, error) {
	if err := k.check(); err != nil {
		return &kube.Result{}, err
	}
	objs, err := objectsOfList(target)
	if err != nil {
		return &kube.Result{}, err
	}
	old, err := objectsOfList(original)
	if err != nil {
		return &kube.Result{}, err
	}
	if !k.isRecorded() {
		return &kube.Result{Updated: target}, k.beforeRecord(objs, true)
	}
	res := &kube.Result{}
	for _, info := range target {
		if original.Get(info) != nil {
			res.Updated = append(res.Updated, info)
		} else {
			res.Created = append(res.Created, info)
		}
	}
	for _, info := range original {
		if target.Get(info) == nil {
			res.Deleted = append(res.Deleted, info)
		}
	}
	// Helm reads the result even on failure (cleanupOnFail deletes what
	// was created).
	return res, k.spread(objs, old, objs)
}

// spread applies objs to the members and prunes among the kinds of kinds.
func (k *distClient) spread(objs []*unstructured.Unstructured, kinds ...[]*unstructured.Unstructured) error {
	rel, err := k.release()
	if err != nil {
		return err
	}
	sp, err := k.d.spreadObjects(objs, k.namespace, rel)
	if err != nil {
		return fmt.Errorf("distributor %s: release %s: %w", k.d.name, rel, err)
	}
	if err := k.d.warn(sp, rel, nil); err != nil {
		return fmt.Errorf("distributor %s: %w", k.d.name, err)
	}
	if err := k.d.applyAndPrune(k.ctx, sp, rel, kindsOf(kinds...), k.pre); err != nil {
		return fmt.Errorf("distributor %s: release %s: %w", k.d.name, rel, err)
	}
	return nil
}

// Delete deletes the resources from every member.
func (k *distClient) Delete(resources kube.ResourceList) (*kube.Result, []error) {
	return k.DeleteWithPropagationPolicy(resources, metav1.DeletePropagationBackground)
}

// DeleteWithPropagationPolicy deletes the resources from every member
// with policy; absent copies count as deleted, as in Helm. It runs after
// cancellation too: Helm deletes to clean up.
func (k *distClient) DeleteWithPropagationPolicy(resources kube.ResourceList, policy metav1.DeletionPropagation) (*kube.Result, []error) {
	refs := make([]release.ObjectRef, 0, len(resources))
	for _, info := range resources {
		refs = append(refs, release.RefOfInfo(info))
	}
	// The release's objects and hooks are deleted only where they carry
	// its inventory labels.
	var owner *releaseID
	if rel, err := k.release(); err == nil {
		owner = &rel
	}
	if err := k.d.deleteEverywhere(context.WithoutCancel(k.ctx), refs, release.DeleteOptions{Propagation: policy}, owner); err != nil {
		return &kube.Result{}, []error{fmt.Errorf("distributor %s: %w", k.d.name, err)}
	}
	return &kube.Result{Deleted: resources}, nil
}

// WaitForDelete returns at once: members delete synchronously or in the
// background, as Helm's own client without waiting does.
func (k *distClient) WaitForDelete(kube.ResourceList, time.Duration) error { return k.check() }

// Wait waits until every member's copy (Jobs excepted) is Current.
func (k *distClient) Wait(resources kube.ResourceList, timeout time.Duration) error {
	return k.WaitContext(k.ctx, resources, timeout, false)
}

// WaitWithJobs waits until every member's copy is Current.
func (k *distClient) WaitWithJobs(resources kube.ResourceList, timeout time.Duration) error {
	return k.WaitContext(k.ctx, resources, timeout, true)
}

// WaitContext waits until every member's copy of resources is Current by
// kstatus (Jobs only with jobs), observing ctx. It fails at once when a
// copy is Failed, and after timeout with a *NotReadyError per member that
// is not ready, naming each object and why.
func (k *distClient) WaitContext(ctx context.Context, resources kube.ResourceList, timeout time.Duration, jobs bool) error {
	return k.WaitJudged(ctx, resources, timeout, jobs, nil)
}

// WaitJudged is WaitContext with judge deciding, before kstatus, the
// copies it takes: the Release's spec.healthCheckExprs (nil: none).
func (k *distClient) WaitJudged(ctx context.Context, resources kube.ResourceList, timeout time.Duration, jobs bool, judge release.Judge) error {
	objs, err := objectsOfList(resources)
	if err != nil {
		return err
	}
	if !k.isRecorded() {
		// Helm waits for the CRDs it created before its record; they are
		// applied, and waited for, with the release's first objects.
		return nil
	}
	sp, err := k.d.spreadObjects(objs, k.namespace, releaseID{})
	if err != nil {
		return fmt.Errorf("distributor %s: wait: %w", k.d.name, err)
	}
	refs := make([][]release.ObjectRef, len(k.d.members))
	for i := range refs {
		for _, o := range sp.member(i, nil).objects {
			ref := release.RefOf(o)
			if ref.Kind == "Job" && ref.Group == "batch" && !jobs {
				continue
			}
			refs[i] = append(refs[i], ref)
		}
	}
	return k.d.waitMembers(ctx, refs, timeout, func(reader release.ObjectReader, _ string, refs []release.ObjectRef) ([]release.ObjectStatus, []release.ObjectStatus, error) {
		return release.UnreadyJudged(ctx, reader, refs, judge)
	})
}

// checkFunc reports, for one member, the objects still pending and those
// that failed.
type checkFunc func(reader release.ObjectReader, member string, refs []release.ObjectRef) (pending, failed []release.ObjectStatus, err error)

// waitMembers polls every member with refs until check finds nothing
// pending, a member fails, or ctx or timeout ends the wait. Errors are
// *NotReadyError (or the member's read error) per member, joined.
func (d *Distributor) waitMembers(ctx context.Context, refs [][]release.ObjectRef, timeout time.Duration, check checkFunc) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(d.poll)
	defer ticker.Stop()
	errs := make([]error, len(d.members))
	last := make([][]release.ObjectStatus, len(d.members))
	for {
		open := 0
		for i, r := range refs {
			if len(r) == 0 || errs[i] != nil {
				continue
			}
			name := d.members[i].Facts.Name
			pending, failed, err := check(d.members[i].Cluster, name, r)
			switch {
			case err != nil && ctx.Err() != nil:
				return &release.NotReadyError{Cluster: name, Timeout: timeout, Objects: last[i], Err: ctx.Err()}
			case err != nil:
				errs[i] = &MemberError{Member: name, Err: err}
			case len(failed) > 0:
				errs[i] = &release.NotReadyError{Cluster: name, Timeout: timeout, Objects: append(failed, pending...)}
			default:
				refs[i], last[i] = refsOf(pending), pending
				if len(pending) > 0 {
					open++
				}
			}
		}
		if open == 0 {
			return errors.Join(errs...)
		}
		select {
		case <-wctx.Done():
			for i, st := range last {
				if len(st) > 0 && errs[i] == nil {
					e := &release.NotReadyError{Cluster: d.members[i].Facts.Name, Timeout: timeout, Objects: st}
					if ctx.Err() != nil {
						e.Err = ctx.Err()
					}
					errs[i] = e
				}
			}
			return errors.Join(errs...)
		case <-ticker.C:
		}
	}
}

// refsOf returns the objects of st.
func refsOf(st []release.ObjectStatus) []release.ObjectRef {
	out := make([]release.ObjectRef, len(st))
	for i, s := range st {
		out[i] = s.Object
	}
	return out
}

// createHooks runs hook objects on the members the release's workloads
// go to, or where a policy places them, with what they use (see
// hookSpread), with the override policies applied per member.
func (k *distClient) createHooks(resources kube.ResourceList) error {
	hooks, err := objectsOfList(resources)
	if err != nil {
		return err
	}
	rel, err := k.release()
	if err != nil {
		return err
	}
	placed, err := k.hookCopies(rel, hooks)
	if err != nil {
		return fmt.Errorf("distributor %s: release %s: hooks: %w", k.d.name, rel, err)
	}
	k.mu.Lock()
	for ref := range k.hooks {
		delete(k.hooks, ref)
	}
	for i, list := range placed.objects {
		for _, o := range list {
			ref := release.RefOf(o)
			k.hooks[ref] = append(k.hooks[ref], k.d.members[i].Facts.Name)
		}
	}
	k.mu.Unlock()
	err = k.d.eachMember(k.ctx, nil, func(ctx context.Context, i int) error {
		if len(placed.objects[i]) == 0 {
			return nil
		}
		errs := k.d.ensureNamespaces(ctx, k.d.members[i].Cluster, placed.objects[i], k.pre)
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		if err := k.d.ensureCRDs(ctx, i, k.pre); err != nil {
			return err
		}
		for _, o := range placed.objects[i] {
			if _, err := k.d.members[i].Cluster.Apply(ctx, o, release.ApplyOptions{DiscardResult: true, FieldManager: k.d.fieldManager, Force: true}); err != nil {
				errs = append(errs, fmt.Errorf("apply hook %s: %w", release.RefOf(o), err))
			}
		}
		return errors.Join(errs...)
	})
	if err := errors.Join(err, errors.Join(placed.errs...)); err != nil {
		return fmt.Errorf("distributor %s: release %s: hooks: %w", k.d.name, rel, err)
	}
	return nil
}

// workloadKinds are the kinds that run pods.
var workloadKinds = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}: true, {Group: "apps", Kind: "StatefulSet"}: true,
	{Group: "apps", Kind: "DaemonSet"}: true, {Group: "apps", Kind: "ReplicaSet"}: true,
	{Group: "batch", Kind: "Job"}: true, {Group: "batch", Kind: "CronJob"}: true,
	{Group: "", Kind: "Pod"}: true,
}

// hookCopies computes each member's copies of the hook objects, stamped
// with rel's inventory labels and InventoryHookLabel, from the placement
// of the release's newest record (hookSpread). A hook object that goes
// to no member is an error, whatever Config.Strict says: a hook that runs
// nowhere would let the release pass a step it never took.
func (k *distClient) hookCopies(rel releaseID, hooks []*unstructured.Unstructured) (*hookCopiesOf, error) {
	last, err := storage.Init(k.releases).Last(rel.Name)
	if err != nil {
		return nil, fmt.Errorf("read release record on the %s: %w", k.d.hubName(), err)
	}
	want := map[policy.ObjectKey]bool{}
	for _, h := range hooks {
		want[policy.KeyOf(h)] = true
	}
	k.mu.Lock()
	cached := k.placed
	k.mu.Unlock()
	var sp *spread
	if cached != nil && cached.rel == rel && cached.version == last.Version {
		sp = cached.sp
		for key := range want {
			if sp.byKey[key] == nil {
				sp = nil
				break
			}
		}
	}
	if sp == nil {
		if sp, err = k.d.hookSpread(k.ctx, last, k.namespace, hooks); err != nil {
			return nil, err
		}
		k.mu.Lock()
		k.placed = &hookPlacement{rel: rel, version: last.Version, sp: sp}
		k.mu.Unlock()
	}
	if err := k.d.warn(sp, rel, want); err != nil {
		return nil, err
	}
	var nowhere []string
	for _, w := range sp.placement.Warnings {
		if w.Code == policy.WarnNotPlaced && want[w.Object] {
			nowhere = append(nowhere, w.Message)
		}
	}
	if len(nowhere) > 0 {
		return nil, fmt.Errorf("a hook that runs nowhere: %s", strings.Join(nowhere, "; "))
	}
	out := &hookCopiesOf{objects: make([][]*unstructured.Unstructured, len(k.d.members))}
	var overrideErrs []error
	for i := range out.objects {
		// Only the hooks are computed; only their own placement and
		// override errors fail the hooks.
		cp := sp.member(i, func(key policy.ObjectKey) bool { return want[key] })
		for _, o := range cp.objects {
			stamp(o, rel)
			o.SetLabels(withLabel(o.GetLabels(), InventoryHookLabel, "true"))
		}
		out.objects[i] = cp.objects
		for _, e := range cp.errs {
			if oe := (*policy.OverrideError)(nil); errors.As(e, &oe) {
				overrideErrs = append(overrideErrs, e)
			}
		}
	}
	out.errs = overrideErrs
	for _, h := range hooks {
		if op := sp.placement.Get(policy.KeyOf(h)); op != nil && op.Err != nil {
			out.errs = append(out.errs, op.Err)
		}
	}
	return out, nil
}

// hookCopiesOf are every member's copies of hook objects, index as
// Distributor.members, and the errors of their placement and overrides.
type hookCopiesOf struct {
	objects [][]*unstructured.Unstructured
	errs    []error
}

func withLabel(l map[string]string, k, v string) map[string]string {
	if l == nil {
		l = map[string]string{}
	}
	l[k] = v
	return l
}

// hookSpread places a release record's manifest together with all its
// hooks (and extra, hook objects Helm creates now, if the record lacks
// them): a hook that a policy selects goes where it says; a hook workload
// (a Job, a Pod) that none selects goes where the release's workloads go
// (the default placement); and what a hook uses — its ServiceAccount,
// the Roles, ClusterRoles and bindings of that ServiceAccount, the
// ConfigMaps and Secrets it names — follows the hooks that use it, so it
// is there wherever they run.
func (d *Distributor) hookSpread(ctx context.Context, last *helmrelease.Release, namespace string, extra []*unstructured.Unstructured) (*spread, error) {
	objs, _, err := d.buildWith(ctx, last.Manifest, namespace, last.Chart)
	if err != nil {
		return nil, err
	}
	seen := map[policy.ObjectKey]bool{}
	for _, o := range objs {
		seen[policy.KeyOf(o)] = true
	}
	add := func(list []*unstructured.Unstructured) {
		for _, h := range list {
			// A hook named like an object of the manifest would collide
			// in Place; only the first copy matters for the placement.
			if key := policy.KeyOf(h); !seen[key] {
				seen[key] = true
				objs = append(objs, h)
			}
		}
	}
	for _, h := range last.Hooks {
		list, _, err := d.buildWith(ctx, h.Manifest, namespace, last.Chart)
		if err != nil {
			return nil, fmt.Errorf("hook %s: %w", h.Path, err)
		}
		add(list)
	}
	add(extra)
	return d.spreadObjects(objs, namespace, releaseID{})
}

// hookMembers returns the member indexes a hook object went to.
func (k *distClient) hookMembers(ref release.ObjectRef) []int {
	k.mu.Lock()
	names := k.hooks[ref]
	k.mu.Unlock()
	var out []int
	for i, m := range k.d.members {
		for _, n := range names {
			if m.Facts.Name == n {
				out = append(out, i)
			}
		}
	}
	return out
}

// WatchUntilReady waits until every member's copy of the hook objects has
// completed: Jobs Complete, Pods Succeeded, other kinds present. A Failed
// Job or Pod ends the wait at once with its member's error.
func (k *distClient) WatchUntilReady(resources kube.ResourceList, timeout time.Duration) error {
	if err := k.check(); err != nil {
		return err
	}
	refs := make([][]release.ObjectRef, len(k.d.members))
	for _, info := range resources {
		ref := release.RefOfInfo(info)
		for _, i := range k.hookMembers(ref) {
			refs[i] = append(refs[i], ref)
		}
	}
	return k.d.waitMembers(k.ctx, refs, timeout, func(reader release.ObjectReader, _ string, refs []release.ObjectRef) ([]release.ObjectStatus, []release.ObjectStatus, error) {
		return hookPending(k.ctx, reader, refs)
	})
}

// hookPending judges hook objects as Helm does: a Job must complete, a Pod
// must succeed, anything else only exist.
func hookPending(ctx context.Context, reader release.ObjectReader, refs []release.ObjectRef) (pending, failed []release.ObjectStatus, err error) {
	for _, ref := range refs {
		obj, gerr := reader.Get(ctx, ref)
		if gerr != nil {
			if ctx.Err() != nil || !errors.Is(gerr, release.ErrNotFound) {
				return nil, nil, gerr
			}
			pending = append(pending, release.ObjectStatus{Object: ref, Status: string(kstatus.NotFoundStatus), Message: gerr.Error()})
			continue
		}
		switch {
		case ref.Kind == "Job" && ref.Group == "batch":
			res, cerr := kstatus.Compute(obj)
			switch {
			case cerr != nil:
				pending = append(pending, release.ObjectStatus{Object: ref, Status: string(kstatus.UnknownStatus), Message: cerr.Error()})
			case res.Status == kstatus.FailedStatus:
				failed = append(failed, release.ObjectStatus{Object: ref, Status: string(res.Status), Message: res.Message})
			case res.Status != kstatus.CurrentStatus:
				pending = append(pending, release.ObjectStatus{Object: ref, Status: string(res.Status), Message: res.Message})
			}
		case ref.Kind == "Pod" && ref.Group == "":
			phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
			switch corev1.PodPhase(phase) {
			case corev1.PodSucceeded:
			case corev1.PodFailed:
				msg, _, _ := unstructured.NestedString(obj.Object, "status", "message")
				failed = append(failed, release.ObjectStatus{Object: ref, Status: string(kstatus.FailedStatus), Message: "pod failed: " + msg})
			default:
				pending = append(pending, release.ObjectStatus{Object: ref, Status: string(kstatus.InProgressStatus), Message: "pod phase " + phase})
			}
		}
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].Object.String() < pending[j].Object.String() })
	return pending, failed, nil
}

// WaitAndGetCompletedPodPhase waits for hook Pod name of the release's
// namespace on every member it went to: Failed if it failed on any,
// Succeeded once it succeeded on all.
func (k *distClient) WaitAndGetCompletedPodPhase(name string, timeout time.Duration) (corev1.PodPhase, error) {
	ref := release.ObjectRef{GroupVersionKind: corev1.SchemeGroupVersion.WithKind("Pod"), Namespace: k.namespace, Name: name}
	refs := make([][]release.ObjectRef, len(k.d.members))
	for _, i := range k.hookMembers(ref) {
		refs[i] = []release.ObjectRef{ref}
	}
	err := k.d.waitMembers(k.ctx, refs, timeout, func(reader release.ObjectReader, _ string, refs []release.ObjectRef) ([]release.ObjectStatus, []release.ObjectStatus, error) {
		return hookPending(k.ctx, reader, refs)
	})
	var nr *release.NotReadyError
	switch {
	case err == nil:
		return corev1.PodSucceeded, nil
	case errors.As(err, &nr) && nr.Err == nil && len(nr.Objects) > 0 && nr.Objects[0].Status == string(kstatus.FailedStatus):
		return corev1.PodFailed, nil
	}
	return corev1.PodUnknown, err
}

// observedDriver is the hub's storage driver, watched: each record read
// or written teaches the Distributor which release a manifest belongs to
// (for DetectDrift). A client bound to a release keeps it while Helm
// works on that release's records, and gets their chart; it follows a
// record of another release, as the Reconciler's uninstall of a release
// the Release had under an older name or namespace goes through a
// configuration scoped to its current one. An unbound client works for
// the release whose record Helm wrote or read last.
//
// Its errors, other than Helm's own answers (no such release, …), name
// the hub and the namespace of the records: a storage error of the hub
// (its namespace is missing, it refuses the Secret) is not a member's.
type observedDriver struct {
	driver.Driver
	d         *Distributor
	client    *distClient
	namespace string // the scope's storage namespace
}

// hubErr names the hub and the records' namespace in err, an error of
// the hub's storage; Helm's own answers pass unchanged.
func (o *observedDriver) hubErr(err error) error {
	if err == nil {
		return nil
	}
	for _, answer := range []error{driver.ErrReleaseNotFound, driver.ErrReleaseExists, driver.ErrNoDeployedReleases, driver.ErrInvalidKey} {
		if errors.Is(err, answer) {
			return err
		}
	}
	return fmt.Errorf("distributor %s: %s: release records in namespace %s: %w", o.d.name, o.d.hubName(), o.namespace, err)
}

func (o *observedDriver) saw(rls ...*helmrelease.Release) {
	var newest *helmrelease.Release
	for _, r := range rls {
		if r == nil {
			continue
		}
		id := releaseID{Namespace: r.Namespace, Name: r.Name}
		o.d.known.learn(id, r.Version, r.Manifest, r.Chart)
		if newest == nil || r.Version > newest.Version {
			newest = r
		}
	}
	if newest != nil {
		o.client.setRelease(releaseID{Namespace: newest.Namespace, Name: newest.Name}, newest.Chart)
	}
}

// setRelease notes that Helm works on the record of rel, whose chart is c.
func (k *distClient) setRelease(rel releaseID, c *chart.Chart) {
	k.mu.Lock()
	k.cur, k.chart = rel, c
	k.mu.Unlock()
}

// Create stores rls and notes it. Under Strict, a record with objects or
// hooks that would go to no member is not stored (refuseUnplaced).
func (o *observedDriver) Create(key string, rls *helmrelease.Release) error {
	if err := o.d.refuseUnplaced(o.client.ctx, rls); err != nil {
		return err
	}
	o.saw(rls)
	o.client.markRecorded()
	return o.hubErr(o.Driver.Create(key, rls))
}

// Update stores rls and notes it.
func (o *observedDriver) Update(key string, rls *helmrelease.Release) error {
	o.saw(rls)
	return o.hubErr(o.Driver.Update(key, rls))
}

// Delete removes one record.
func (o *observedDriver) Delete(key string) (*helmrelease.Release, error) {
	r, err := o.Driver.Delete(key)
	return r, o.hubErr(err)
}

// Get reads one record and notes it.
func (o *observedDriver) Get(key string) (*helmrelease.Release, error) {
	r, err := o.Driver.Get(key)
	if err == nil {
		o.saw(r)
	}
	return r, o.hubErr(err)
}

// List reads the records filter keeps.
func (o *observedDriver) List(filter func(*helmrelease.Release) bool) ([]*helmrelease.Release, error) {
	rs, err := o.Driver.List(filter)
	return rs, o.hubErr(err)
}

// Query reads the records matching labels and notes the newest.
func (o *observedDriver) Query(labels map[string]string) ([]*helmrelease.Release, error) {
	rs, err := o.Driver.Query(labels)
	if err == nil && labels["name"] != "" {
		o.saw(rs...)
	}
	return rs, o.hubErr(err)
}

// manifestMapper maps kinds to resources: client-go's built-in kinds, the
// kinds a manifest's CustomResourceDefinitions define, those of the CRDs
// of charts' crds/ it has seen, and whatever an extra mapper knows.
type manifestMapper struct {
	base  *meta.DefaultRESTMapper
	extra meta.RESTMapper

	mu      sync.Mutex
	learned map[schema.GroupVersionKind]*meta.RESTMapping
	charts  map[string][]release.ObjectRef // crds/ of the charts learned, by name-version
}

// learn remembers the kinds the CRDs among objs define: a kind is the
// same on every member, and custom resources of crds/ must map before
// their CRDs are on any member.
func (m *manifestMapper) learn(objs []*unstructured.Unstructured) {
	found := m.crdsOf(objs)
	if len(found) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.learned == nil {
		m.learned = map[schema.GroupVersionKind]*meta.RESTMapping{}
	}
	for gvk, mp := range found {
		m.learned[gvk] = mp
	}
}

// learnChart learns the kinds of a chart's crds/, once per chart name and
// version, and returns the CRDs' references and whether this call learned
// them (false when they were known already, or the chart has none).
func (m *manifestMapper) learnChart(c *chart.Chart) ([]release.ObjectRef, bool) {
	if c == nil || c.Metadata == nil || len(c.CRDObjects()) == 0 {
		return nil, false
	}
	id := c.Metadata.Name + "-" + c.Metadata.Version
	m.mu.Lock()
	refs, done := m.charts[id]
	m.mu.Unlock()
	if done {
		return refs, false
	}
	var objs []*unstructured.Unstructured
	for _, crd := range c.CRDObjects() {
		if list, err := decodeManifest(bytes.NewReader(crd.File.Data)); err == nil {
			objs = append(objs, list...)
		}
	}
	for _, o := range objs {
		refs = append(refs, release.RefOf(o))
	}
	m.learn(objs)
	m.mu.Lock()
	if m.charts == nil {
		m.charts = map[string][]release.ObjectRef{}
	}
	m.charts[id] = refs
	m.mu.Unlock()
	return refs, true
}

// rootKinds are the built-in kinds without a namespace, by group; every
// other kind of client-go's scheme is namespaced.
var rootKinds = map[string][]string{
	"":                             {"Namespace", "Node", "PersistentVolume", "ComponentStatus"},
	"rbac.authorization.k8s.io":    {"ClusterRole", "ClusterRoleBinding"},
	"apiextensions.k8s.io":         {"CustomResourceDefinition"},
	"storage.k8s.io":               {"StorageClass", "CSIDriver", "CSINode", "VolumeAttachment", "VolumeAttributesClass"},
	"scheduling.k8s.io":            {"PriorityClass"},
	"node.k8s.io":                  {"RuntimeClass"},
	"networking.k8s.io":            {"IngressClass", "IPAddress", "ServiceCIDR"},
	"admissionregistration.k8s.io": {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"},
	"apiregistration.k8s.io":       {"APIService"},
	"certificates.k8s.io":          {"CertificateSigningRequest", "ClusterTrustBundle"},
	"flowcontrol.apiserver.k8s.io": {"FlowSchema", "PriorityLevelConfiguration"},
	"resource.k8s.io":              {"DeviceClass", "ResourceSlice"},
	"storagemigration.k8s.io":      {"StorageVersionMigration"},
	"authentication.k8s.io":        {"TokenReview", "SelfSubjectReview"},
	"authorization.k8s.io":         {"SubjectAccessReview", "SelfSubjectAccessReview", "SelfSubjectRulesReview"},
}

func newManifestMapper(extra meta.RESTMapper) *manifestMapper {
	root := map[schema.GroupKind]bool{}
	for group, kinds := range rootKinds {
		for _, k := range kinds {
			root[schema.GroupKind{Group: group, Kind: k}] = true
		}
	}
	known := scheme.Scheme.AllKnownTypes()
	var gvs []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for gvk := range known {
		if gvk.Version != runtimeInternal && !seen[gvk.GroupVersion()] {
			seen[gvk.GroupVersion()] = true
			gvs = append(gvs, gvk.GroupVersion())
		}
	}
	sort.Slice(gvs, func(i, j int) bool { return gvs[i].String() < gvs[j].String() })
	m := meta.NewDefaultRESTMapper(append(gvs, schema.GroupVersion{Group: "policy.karmada.io", Version: "v1alpha1"}))
	for gvk := range known {
		if gvk.Version == runtimeInternal || strings.HasSuffix(gvk.Kind, "List") || strings.HasSuffix(gvk.Kind, "Options") {
			continue
		}
		scope := meta.RESTScopeNamespace
		if root[gvk.GroupKind()] {
			scope = meta.RESTScopeRoot
		}
		m.Add(gvk, scope)
	}
	m.Add(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, meta.RESTScopeRoot)
	// Policies a chart renders itself are read out of the manifest, never
	// applied to members, but Helm builds them with the rest.
	pgv := schema.GroupVersion{Group: "policy.karmada.io", Version: "v1alpha1"}
	m.AddSpecific(pgv.WithKind(policy.KindPropagationPolicy), pgv.WithResource("propagationpolicies"), pgv.WithResource("propagationpolicy"), meta.RESTScopeNamespace)
	m.AddSpecific(pgv.WithKind(policy.KindOverridePolicy), pgv.WithResource("overridepolicies"), pgv.WithResource("overridepolicy"), meta.RESTScopeNamespace)
	m.AddSpecific(pgv.WithKind(policy.KindClusterPropagationPolicy), pgv.WithResource("clusterpropagationpolicies"), pgv.WithResource("clusterpropagationpolicy"), meta.RESTScopeRoot)
	m.AddSpecific(pgv.WithKind(policy.KindClusterOverridePolicy), pgv.WithResource("clusteroverridepolicies"), pgv.WithResource("clusteroverridepolicy"), meta.RESTScopeRoot)
	return &manifestMapper{base: m, extra: extra}
}

const runtimeInternal = "__internal"

// crdsOf returns the mappings the CustomResourceDefinitions among objs
// define.
func (m *manifestMapper) crdsOf(objs []*unstructured.Unstructured) map[schema.GroupVersionKind]*meta.RESTMapping {
	out := map[schema.GroupVersionKind]*meta.RESTMapping{}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" || o.GroupVersionKind().Group != "apiextensions.k8s.io" {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		plural, _, _ := unstructured.NestedString(o.Object, "spec", "names", "plural")
		scope := meta.RESTScopeNamespace
		if s, _, _ := unstructured.NestedString(o.Object, "spec", "scope"); s == "Cluster" {
			scope = meta.RESTScopeRoot
		}
		versions, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
		for _, v := range versions {
			name, _ := v.(map[string]any)["name"].(string)
			if name == "" || kind == "" {
				continue
			}
			gvk := schema.GroupVersionKind{Group: group, Version: name, Kind: kind}
			out[gvk] = &meta.RESTMapping{Resource: schema.GroupVersionResource{Group: group, Version: name, Resource: plural}, GroupVersionKind: gvk, Scope: scope}
		}
	}
	return out
}

func (m *manifestMapper) mapping(gvk schema.GroupVersionKind, crds map[schema.GroupVersionKind]*meta.RESTMapping) (*meta.RESTMapping, error) {
	if cm, ok := crds[gvk]; ok {
		return cm, nil
	}
	m.mu.Lock()
	cm, ok := m.learned[gvk]
	m.mu.Unlock()
	if ok {
		return cm, nil
	}
	mp, err := m.base.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil || m.extra == nil {
		return mp, err
	}
	return m.extra.RESTMapping(gvk.GroupKind(), gvk.Version)
}
