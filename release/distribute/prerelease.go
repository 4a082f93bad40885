package distribute

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/releaseutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/helmfleet/helmfleet/release"
)

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

func isCRDObject(o *unstructured.Unstructured) bool {
	return o.GroupVersionKind().GroupKind() == crdGVK.GroupKind()
}

// crdEstablishTimeout bounds the wait for a CRD to be served before the
// objects that use it are applied, as Helm waits after installing crds/.
const crdEstablishTimeout = 60 * time.Second

// preRelease holds what Helm writes before the release record of an
// install or upgrade: the CustomResourceDefinitions of the chart's crds/
// (Helm's install, or the Reconciler's CRD policy) and the release's
// Namespace (install.createNamespace). The hub gets neither; they go to
// the members with the release's first objects there: each CRD to every
// member the release reaches (its objects or hooks), before anything
// else, and the Namespace wherever objects go into it.
type preRelease struct {
	mu         sync.Mutex
	crds       []pendingCRD                          // in the order Helm wrote them
	namespaces map[string]*unstructured.Unstructured // by name
	done       map[int]bool                          // members that have the CRDs
}

// pendingCRD is one CRD of crds/ and whether it replaces a member's copy
// (CRD policy CreateReplace) or is only created where missing (Create,
// as Helm does).
type pendingCRD struct {
	obj     *unstructured.Unstructured
	replace bool
}

// add records objs, which Helm creates (replace false) or updates (true)
// before its release record. Only CRDs and Namespaces are expected there.
func (p *preRelease) add(objs []*unstructured.Unstructured, replace bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range objs {
		switch {
		case isCRDObject(o):
			found := false
			for i := range p.crds {
				if p.crds[i].obj.GetName() == o.GetName() {
					p.crds[i] = pendingCRD{obj: o, replace: p.crds[i].replace || replace}
					found = true
				}
			}
			if !found {
				p.crds = append(p.crds, pendingCRD{obj: o, replace: replace})
			}
			p.done = nil
		case o.GroupVersionKind().GroupKind() == namespaceGVK.GroupKind():
			if p.namespaces == nil {
				p.namespaces = map[string]*unstructured.Unstructured{}
			}
			p.namespaces[o.GetName()] = o
		default:
			return fmt.Errorf("%s %q was written before the release record; Helm writes only CustomResourceDefinitions (crds/) and the release's Namespace (createNamespace) there", o.GetKind(), o.GetName())
		}
	}
	return nil
}

// namespace returns the Namespace object Helm asked for, or nil.
func (p *preRelease) namespace(name string) *unstructured.Unstructured {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.namespaces[name]
}

// pending returns the CRDs member i still needs; nil when it has them.
func (p *preRelease) pending(i int) []pendingCRD {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done[i] {
		return nil
	}
	return append([]pendingCRD(nil), p.crds...)
}

func (p *preRelease) markDone(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		p.done = map[int]bool{}
	}
	p.done[i] = true
}

// crdVersions returns the "group/version" and "group/version/Kind" API
// versions the CRDs among objs serve, as discovery lists them once they
// are installed (reconcile.CRDVersions, read from objects already decoded).
func crdVersions(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		if !isCRDObject(o) {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
		for _, v := range versions {
			vm, _ := v.(map[string]any)
			name, _ := vm["name"].(string)
			if served, _ := vm["served"].(bool); !served || name == "" {
				continue
			}
			out = append(out, group+"/"+name, group+"/"+name+"/"+kind)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// heldAnywhere reports whether a member already holds a CRD among objs
// (a member that cannot be asked counts as not holding it).
func (d *Distributor) heldAnywhere(ctx context.Context, objs []*unstructured.Unstructured) (string, bool) {
	held := make([]string, len(d.members))
	_ = d.eachMember(ctx, nil, func(ctx context.Context, i int) error {
		for _, o := range objs {
			if !isCRDObject(o) {
				continue
			}
			if _, err := d.members[i].Cluster.Get(ctx, release.RefOf(o)); err == nil {
				held[i] = o.GetName()
				return nil
			}
		}
		return nil
	})
	for _, name := range held {
		if name != "" {
			return name, true
		}
	}
	return "", false
}

// alreadyExists is the error Helm takes for "this CRD is there already".
func alreadyExists(name string) error {
	return apierrors.NewAlreadyExists(schema.GroupResource{Group: crdGVK.Group, Resource: "customresourcedefinitions"}, name)
}

// ensureCRDs gives member i the CRDs of pre it lacks (and, with replace,
// replaces those it has), then waits until they are served. They carry
// no inventory labels: as Helm never deletes the CRDs of crds/, the
// Distributor never prunes or uninstalls them.
func (d *Distributor) ensureCRDs(ctx context.Context, i int, pre *preRelease) error {
	crds := pre.pending(i)
	if len(crds) == 0 {
		return nil
	}
	m := d.members[i].Cluster
	var errs []error
	var applied []release.ObjectRef
	for _, c := range crds {
		ref := release.RefOf(c.obj)
		_, err := m.Get(ctx, ref)
		switch {
		case err == nil && !c.replace:
			continue
		case err != nil && !errors.Is(err, release.ErrNotFound):
			errs = append(errs, fmt.Errorf("crds: get %s: %w", ref, err))
			continue
		}
		if _, err := m.Apply(ctx, c.obj.DeepCopy(), release.ApplyOptions{DiscardResult: true, FieldManager: d.fieldManager, Force: true}); err != nil {
			errs = append(errs, fmt.Errorf("crds: apply %s: %w", ref, err))
			continue
		}
		applied = append(applied, ref)
	}
	if err := d.waitServed(ctx, i, applied); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		pre.markDone(i)
	}
	return errors.Join(errs...)
}

// waitServed waits until the CRDs refs are Current by kstatus
// (Established) on member i, so that custom resources of them can be
// applied.
func (d *Distributor) waitServed(ctx context.Context, i int, refs []release.ObjectRef) error {
	if len(refs) == 0 {
		return nil
	}
	m := d.members[i].Cluster
	wctx, cancel := context.WithTimeout(ctx, crdEstablishTimeout)
	defer cancel()
	ticker := time.NewTicker(d.poll)
	defer ticker.Stop()
	for {
		var pending []release.ObjectStatus
		for _, ref := range refs {
			obj, err := m.Get(wctx, ref)
			if err != nil {
				if wctx.Err() != nil {
					break
				}
				return fmt.Errorf("crds: get %s: %w", ref, err)
			}
			res, err := kstatus.Compute(obj)
			switch {
			case err != nil:
				pending = append(pending, release.ObjectStatus{Object: ref, Status: string(kstatus.UnknownStatus), Message: err.Error()})
			case res.Status == kstatus.FailedStatus:
				return fmt.Errorf("crds: %s failed: %s", ref, res.Message)
			case res.Status != kstatus.CurrentStatus:
				pending = append(pending, release.ObjectStatus{Object: ref, Status: string(res.Status), Message: res.Message})
			}
		}
		if len(pending) == 0 && wctx.Err() == nil {
			return nil
		}
		select {
		case <-wctx.Done():
			return &release.NotReadyError{Cluster: d.members[i].Facts.Name, Timeout: crdEstablishTimeout, Objects: pending, Err: ctx.Err()}
		case <-ticker.C:
		}
	}
}

// installOrder sorts objs (one member's copies) as Helm installs them:
// by kind in releaseutil.InstallOrder, unknown kinds last, otherwise in
// their order.
func installOrder(objs []*unstructured.Unstructured) {
	rank := make(map[string]int, len(releaseutil.InstallOrder))
	for i, k := range releaseutil.InstallOrder {
		rank[k] = i
	}
	of := func(o *unstructured.Unstructured) int {
		if r, ok := rank[o.GetKind()]; ok {
			return r
		}
		return len(rank)
	}
	sort.SliceStable(objs, func(i, j int) bool { return of(objs[i]) < of(objs[j]) })
}
