package memory

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/helmfleet/helmfleet/release"
)

// key identifies a stored object independently of its API version, as an
// API server does.
type key struct {
	Group, Kind, Namespace, Name string
}

func keyOf(gvk schema.GroupVersionKind, namespace, name string) key {
	return key{Group: gvk.Group, Kind: gvk.Kind, Namespace: namespace, Name: name}
}

// store is the object store of one in-memory cluster. It keeps objects as
// an API server would: uid, resourceVersion, generation, creation time and
// managedFields maintained by Kubernetes' own field manager, so that
// server-side apply ownership and conflicts behave as on a real cluster.
// A stored object is never written to in place: a write stores a new
// object and every read returns a copy, so stored objects may share parts
// (the managed fields of a Schemas memo).
type store struct {
	mu      sync.Mutex
	objects map[key]*unstructured.Unstructured
	mapper  *restMapper
	schemas *Schemas
	now     func() time.Time
	cluster string
	serial  int64
	alloc   *allocations
}

func newStore(cluster string, now func() time.Time, schemas *Schemas) *store {
	if schemas == nil {
		schemas = NewSchemas()
	}
	return &store{
		objects: map[key]*unstructured.Unstructured{},
		mapper:  newRESTMapper(schemas.mapper, schemas.builtins),
		schemas: schemas,
		now:     now,
		cluster: cluster,
		alloc:   newAllocations(),
	}
}

// fieldManager returns Kubernetes' field manager for writes of gvk in
// mode: typed (with the merge keys of the built-in types) where client-go
// knows the kind, deduced (as for a CRD without schema) elsewhere.
func (s *store) fieldManager(gvk schema.GroupVersionKind, mode statusMode) (*managedfields.FieldManager, error) {
	return s.schemas.fieldManager(gvk, mode)
}

// stripSet holds the fields an API server never records as owned: the
// same set Kubernetes' field manager strips.
var stripSet = fieldpath.NewSet(
	fieldpath.MakePathOrDie("apiVersion"),
	fieldpath.MakePathOrDie("kind"),
	fieldpath.MakePathOrDie("metadata"),
	fieldpath.MakePathOrDie("metadata", "name"),
	fieldpath.MakePathOrDie("metadata", "namespace"),
	fieldpath.MakePathOrDie("metadata", "creationTimestamp"),
	fieldpath.MakePathOrDie("metadata", "selfLink"),
	fieldpath.MakePathOrDie("metadata", "uid"),
	fieldpath.MakePathOrDie("metadata", "clusterName"),
	fieldpath.MakePathOrDie("metadata", "generation"),
	fieldpath.MakePathOrDie("metadata", "managedFields"),
	fieldpath.MakePathOrDie("metadata", "resourceVersion"),
)

// createByApply is server-side apply of an object that does not exist
// yet: no conflict is possible, so the result is the applied object, and
// the applier owns exactly the fields it sent. Computing that field set
// directly gives the managedFields entry Kubernetes' field manager would
// write, at a fraction of its cost (the fleet benchmarks create thousands
// of objects). Callers hold s.mu.
func (s *store) createByApply(gvk schema.GroupVersionKind, in *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	fields, err := s.schemas.createdFields(gvk, in)
	if err != nil {
		return nil, err
	}
	// Written as plain JSON values into in (normalize's copy): SetManagedFields
	// would convert by reflection, which costs more than everything else
	// here. fields is shared with the memo and other stored objects.
	// The entry is shared by the objects created alike (interned).
	mf := s.schemas.appliedFields(manager, gvk.GroupVersion().String(), s.now().UTC().Truncate(time.Second).Format(time.RFC3339), fields)
	meta, ok := in.Object["metadata"].(map[string]any)
	if !ok {
		meta = map[string]any{}
		in.Object["metadata"] = meta
	}
	meta["managedFields"] = mf
	return in, nil
}

// fieldsV1 renders a field set in the FieldsV1 form of managedFields
// ({"f:spec": {"f:replicas": {}}, ".": {}} …) as plain JSON values.
func fieldsV1(set *fieldpath.Set) (map[string]any, error) {
	out := map[string]any{}
	var err error
	set.Members.Iterate(func(pe fieldpath.PathElement) {
		k, e := fieldpath.SerializePathElement(pe)
		if e != nil {
			err = e
			return
		}
		out[k] = map[string]any{}
	})
	set.Children.Iterate(func(pe fieldpath.PathElement) {
		k, e := fieldpath.SerializePathElement(pe)
		if e != nil {
			err = e
			return
		}
		child, _ := set.Children.Get(pe)
		m, e := fieldsV1(child)
		if e != nil {
			err = e
			return
		}
		if _, member := out[k]; member {
			m["."] = map[string]any{}
		}
		out[k] = m
	})
	return out, err
}

// scope checks that gvk is served and fixes the namespace of obj: cleared
// for cluster-scoped kinds, required for namespaced ones.
func (s *store) scope(gvk schema.GroupVersionKind, namespace string) (string, error) {
	m, err := s.mapper.mapping(gvk)
	if err != nil {
		return "", err
	}
	if m.Scope.Name() != "namespace" {
		return "", nil
	}
	if namespace == "" {
		return "", apierrors.NewBadRequest(fmt.Sprintf("%s %s: namespace is required", gvk.Kind, gvk.GroupVersion()))
	}
	return namespace, nil
}

func (s *store) get(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	out, err := s.lookup(gvk, namespace, name)
	if err == nil && out == nil {
		return nil, s.notFoundLocked(gvk, name)
	}
	return out, err
}

// lookup returns a copy of one stored object, or nil and no error when it
// is absent (saving the API error a caller would only turn into its own).
func (s *store) lookup(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns, err := s.scope(gvk, namespace)
	if err != nil {
		return nil, err
	}
	obj, ok := s.objects[keyOf(gvk, ns, name)]
	if !ok {
		return nil, nil
	}
	out := obj.DeepCopy()
	out.SetAPIVersion(gvk.GroupVersion().String())
	return out, nil
}

// notFoundLocked is notFound for callers that do not hold s.mu.
func (s *store) notFoundLocked(gvk schema.GroupVersionKind, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notFound(gvk, name)
}

func (s *store) notFound(gvk schema.GroupVersionKind, name string) error {
	resource := gvk.Kind
	if m, err := s.mapper.mapping(gvk); err == nil {
		resource = m.Resource.Resource
	}
	return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: resource}, name)
}

// list returns the objects of gvk in namespace ("" = all) matching sel,
// sorted by namespace and name.
func (s *store) list(gvk schema.GroupVersionKind, namespace string, sel labels.Selector) ([]*unstructured.Unstructured, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.mapper.mapping(gvk); err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for k, obj := range s.objects {
		if k.Group != gvk.Group || k.Kind != gvk.Kind || (namespace != "" && k.Namespace != namespace) {
			continue
		}
		if sel != nil && !sel.Matches(labels.Set(obj.GetLabels())) {
			continue
		}
		c := obj.DeepCopy()
		c.SetAPIVersion(gvk.GroupVersion().String())
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GetNamespace() != out[j].GetNamespace() {
			return out[i].GetNamespace() < out[j].GetNamespace()
		}
		return out[i].GetName() < out[j].GetName()
	})
	return out, nil
}

// all returns every stored object, sorted by group, kind, namespace, name.
func (s *store) all() []*unstructured.Unstructured {
	s.mu.Lock()
	keys := make([]key, 0, len(s.objects))
	for k := range s.objects {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	out := make([]*unstructured.Unstructured, 0, len(keys))
	for _, k := range keys {
		out = append(out, s.objects[k].DeepCopy())
	}
	s.mu.Unlock()
	return out
}

// create stores a new object written by manager (an Update operation, as
// client-side tools and Helm v3 write). It fails if the object exists.
func (s *store) create(obj *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gvk := obj.GroupVersionKind()
	ns, err := s.scope(gvk, obj.GetNamespace())
	if err != nil {
		return nil, err
	}
	k := keyOf(gvk, ns, obj.GetName())
	if _, ok := s.objects[k]; ok {
		return nil, apierrors.NewAlreadyExists(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, obj.GetName())
	}
	return s.write(k, nil, obj, statusPlain, writeOptions{}, func(fm *managedfields.FieldManager, live, in runtime.Object) (runtime.Object, error) {
		return fm.Update(live, in, manager)
	})
}

// update replaces a stored object with obj written by manager; the object
// is created if absent.
func (s *store) update(obj *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gvk := obj.GroupVersionKind()
	ns, err := s.scope(gvk, obj.GetNamespace())
	if err != nil {
		return nil, err
	}
	k := keyOf(gvk, ns, obj.GetName())
	return s.write(k, s.objects[k], obj, statusPlain, writeOptions{}, func(fm *managedfields.FieldManager, live, in runtime.Object) (runtime.Object, error) {
		return fm.Update(live, in, manager)
	})
}

// apply server-side applies obj for opts.FieldManager to the object or,
// with opts.Subresource "status", to its status (see statusMode).
func (s *store) apply(obj *unstructured.Unstructured, opts release.ApplyOptions) (*unstructured.Unstructured, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gvk := obj.GroupVersionKind()
	ns, err := s.scope(gvk, obj.GetNamespace())
	if err != nil {
		return nil, err
	}
	mode, err := s.applyMode(gvk, opts.Subresource)
	if err != nil {
		return nil, err
	}
	manager, force := opts.FieldManager, opts.Force
	k := keyOf(gvk, ns, obj.GetName())
	live := s.objects[k]
	if live == nil && mode == statusOnly {
		// A subresource is never created by a write to it.
		return nil, s.notFound(gvk, obj.GetName())
	}
	if opts.DryRun {
		fm, err := s.fieldManager(gvk, mode)
		if err != nil {
			return nil, err
		}
		base := live
		if base == nil {
			base = &unstructured.Unstructured{Object: map[string]any{}}
			base.SetGroupVersionKind(gvk)
		}
		in, err := normalize(obj)
		if err != nil {
			return nil, err
		}
		in.SetNamespace(ns)
		mode.prepareIn(in)
		res, err := fm.Apply(base.DeepCopy(), in, manager, force)
		if err != nil {
			return nil, err
		}
		out := mode.prepareOut(live, res.(*unstructured.Unstructured))
		if gvk.GroupKind() == serviceGK && mode != statusOnly {
			if err := s.alloc.service(k, live, out, false); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if live == nil {
		return s.write(k, nil, obj, mode, writeOptions{discard: opts.DiscardResult, asIs: true}, func(_ *managedfields.FieldManager, _, in runtime.Object) (runtime.Object, error) {
			return s.createByApply(gvk, in.(*unstructured.Unstructured), manager)
		})
	}
	return s.write(k, live, obj, mode, writeOptions{discard: opts.DiscardResult}, func(fm *managedfields.FieldManager, l, in runtime.Object) (runtime.Object, error) {
		return fm.Apply(l, in, manager, force)
	})
}

// normalize returns a copy of obj holding only JSON types (int64, float64,
// string, bool, nil, maps and slices), as decoded from the wire, whatever
// Go types the caller built it with.
func normalize(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if m, ok := jsonCopyObject(obj.Object); ok {
		return &unstructured.Unstructured{Object: m}, nil
	}
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return out, nil
}

// serverMetadata is how many metadata fields a write may add to what the
// writer sent (namespace, uid, creationTimestamp, generation,
// resourceVersion, managedFields): the copy's metadata map is made that
// much larger up front, so that storing them does not grow it.
const serverMetadata = 6

// jsonCopyObject is jsonCopy of a whole object, whose metadata map gets
// room for the fields the server adds.
func jsonCopyObject(obj map[string]any) (map[string]any, bool) {
	out := make(map[string]any, len(obj))
	for k, e := range obj {
		if meta, ok := e.(map[string]any); ok && k == "metadata" {
			m := make(map[string]any, len(meta)+serverMetadata)
			for mk, me := range meta {
				c, ok := jsonCopy(me)
				if !ok {
					return nil, false
				}
				m[mk] = c
			}
			out[k] = m
			continue
		}
		c, ok := jsonCopy(e)
		if !ok {
			return nil, false
		}
		out[k] = c
	}
	return out, true
}

// jsonCopy deep-copies v, turning Go integer and float kinds into int64
// and float64 (integral floats into int64, as decoding JSON into an
// unstructured object does); ok is false for anything else JSON decoding would not
// produce (structs, pointers), which normalize then round-trips through
// JSON instead.
func jsonCopy(v any) (any, bool) {
	switch t := v.(type) {
	case nil, string, bool, int64:
		return t, true
	case float64:
		// Decoded from JSON into a plain map, "2" became 2.0; the API
		// server's decoder would have made it int64.
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int64(t), true
		}
		return t, true
	case int:
		return int64(t), true
	case int32:
		return int64(t), true
	case float32:
		return float64(t), true
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			c, ok := jsonCopy(e)
			if !ok {
				return nil, false
			}
			m[k] = c
		}
		return m, true
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			c, ok := jsonCopy(e)
			if !ok {
				return nil, false
			}
			l[i] = c
		}
		return l, true
	}
	return nil, false
}

// write runs op (update or apply through the field manager of mode) and
// stores the result with the metadata an API server maintains. Callers
// hold s.mu.
// With w.asIs (op stores the object it is given, with new metadata only)
// the copy of in shares its other fields with equal ones stored before
// from the start, instead of being copied and interned after op.
func (s *store) write(k key, live, in *unstructured.Unstructured, mode statusMode, w writeOptions, op func(*managedfields.FieldManager, runtime.Object, runtime.Object) (runtime.Object, error)) (*unstructured.Unstructured, error) {
	gvk := in.GroupVersionKind()
	fm, err := s.fieldManager(gvk, mode)
	if err != nil {
		return nil, err
	}
	// A Service's spec gets its cluster IP written into it below: it
	// must be its own.
	shared := w.asIs && live == nil && gvk.GroupKind() != serviceGK
	if m, ok := s.schemas.internCopy(in.Object, shared); shared && ok {
		in = &unstructured.Unstructured{Object: m}
	} else {
		shared = false
		if in, err = normalize(in); err != nil {
			return nil, err
		}
	}
	in.SetNamespace(k.Namespace)
	mode.prepareIn(in)
	base := live
	if base == nil {
		base = &unstructured.Unstructured{Object: map[string]any{}}
		base.SetGroupVersionKind(gvk)
	} else {
		base = base.DeepCopy()
		base.SetAPIVersion(gvk.GroupVersion().String())
		// What a writer sends never changes the server-kept metadata.
		in.SetUID(base.GetUID())
		in.SetCreationTimestamp(base.GetCreationTimestamp())
		in.SetResourceVersion(base.GetResourceVersion())
		in.SetGeneration(base.GetGeneration())
	}
	res, err := op(fm, base, in)
	if err != nil {
		return nil, err
	}
	out := mode.prepareOut(live, res.(*unstructured.Unstructured))
	out.SetGroupVersionKind(gvk)
	out.SetNamespace(k.Namespace)
	if gvk.GroupKind() == serviceGK && mode != statusOnly {
		if err := s.alloc.service(k, live, out, true); err != nil {
			return nil, err
		}
	}
	s.serial++
	if live == nil {
		out.SetUID(types.UID(uidOf(s.cluster, s.serial)))
		out.SetCreationTimestamp(metav1.NewTime(s.now().UTC().Truncate(time.Second)))
		out.SetGeneration(1)
	} else {
		out.SetUID(live.GetUID())
		out.SetCreationTimestamp(live.GetCreationTimestamp())
		gen := live.GetGeneration()
		if specChanged(live, out) {
			gen++
		}
		out.SetGeneration(gen)
		if status, ok := live.Object["status"]; ok {
			if _, sent := out.Object["status"]; !sent {
				out.Object["status"] = runtime.DeepCopyJSONValue(status)
			}
		}
	}
	out.SetResourceVersion(strconv.FormatInt(s.serial, 10))
	s.schemas.intern(out.Object, shared)
	s.objects[k] = out
	if gvk.GroupKind() == crdGVK.GroupKind() {
		s.mapper.learnCRD(out, false)
	}
	if w.discard {
		return nil, nil
	}
	return out.DeepCopy(), nil
}

// uidOf returns the uid of the serial-th write of cluster: the cluster's
// name, a dash and the serial padded to six digits.
func uidOf(cluster string, serial int64) string {
	n := strconv.FormatInt(serial, 10)
	b := make([]byte, 0, len(cluster)+1+max(6, len(n)))
	b = append(append(b, cluster...), '-')
	if serial >= 0 {
		for i := len(n); i < 6; i++ {
			b = append(b, '0')
		}
	}
	return string(append(b, n...))
}

// writeOptions tune one write.
type writeOptions struct {
	// discard returns no object (ApplyOptions.DiscardResult).
	discard bool
	// asIs says the write's op returns the object it is given.
	asIs bool
}

// specChanged reports whether anything but metadata and status changed,
// the rule by which an API server bumps metadata.generation.
func specChanged(a, b *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		m := make(map[string]any, len(u.Object))
		for k, v := range u.Object {
			if k != "metadata" && k != "status" {
				m[k] = v
			}
		}
		return m
	}
	return !equality.Semantic.DeepEqual(strip(a), strip(b))
}

// remove deletes one object and, unless propagation is Orphan, the objects
// it owns (by ownerReferences uid), as the garbage collector would.
func (s *store) remove(gvk schema.GroupVersionKind, namespace, name string, propagation metav1.DeletionPropagation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns, err := s.scope(gvk, namespace)
	if err != nil {
		return err
	}
	k := keyOf(gvk, ns, name)
	obj, ok := s.objects[k]
	if !ok {
		return s.notFound(gvk, name)
	}
	s.drop(k)
	if gvk.GroupKind() == crdGVK.GroupKind() {
		s.mapper.learnCRD(obj, true)
	}
	if propagation != metav1.DeletePropagationOrphan {
		s.collect(obj.GetUID())
	}
	if gvk.Kind == "Namespace" && gvk.Group == "" {
		for k := range s.objects {
			if k.Namespace == name {
				s.drop(k)
			}
		}
	}
	return nil
}

// drop removes the object of k and frees what it holds. Callers hold
// s.mu.
func (s *store) drop(k key) {
	delete(s.objects, k)
	s.alloc.release(k)
}

// collect removes, transitively, every object owned by uid.
func (s *store) collect(uid types.UID) {
	for k, o := range s.objects {
		for _, ref := range o.GetOwnerReferences() {
			if ref.UID == uid {
				s.drop(k)
				s.collect(o.GetUID())
				break
			}
		}
	}
}

// unstructuredConvertor, unstructuredDefaulter and unstructuredCreater let
// Kubernetes' field manager work on unstructured objects of any kind, as
// the API server does for custom resources.
type unstructuredConvertor struct{}

func (unstructuredConvertor) Convert(in, out, _ any) error {
	u, ok := in.(*unstructured.Unstructured)
	o, ok2 := out.(*unstructured.Unstructured)
	if !ok || !ok2 {
		return fmt.Errorf("memory: cannot convert %T to %T", in, out)
	}
	o.Object = runtime.DeepCopyJSON(u.Object)
	return nil
}

func (unstructuredConvertor) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("memory: cannot convert %T", in)
	}
	kind := u.GroupVersionKind()
	if target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{kind}); ok {
		c := u.DeepCopy()
		c.SetGroupVersionKind(target)
		return c, nil
	}
	return u, nil
}

func (unstructuredConvertor) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

type unstructuredDefaulter struct{}

func (unstructuredDefaulter) Default(runtime.Object) {}

type unstructuredCreater struct{}

func (unstructuredCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	return u, nil
}
