package kustomize

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/release"
)

// What a plan shows in place of a value that came from a Secret. No hash
// of the value: a short secret's hash is found by trying every value.
const (
	// secretValue stands for a value that is the same on both sides of a
	// diff (or has only one side).
	secretValue = "(secret value)"
	// secretOld and secretNew stand for a value that differs between the
	// live object and what would be applied.
	secretOld = "(secret value, old)"
	secretNew = "(secret value, new)"
	// lastApplied is kubectl's copy of the whole object.
	lastApplied = "kubectl.kubernetes.io/last-applied-configuration"
)

// SecretSubstitutesAnnotation, on a Flux Kustomization, lists (comma
// separated) the variables of its spec.postBuild.substitute whose values
// are a Secret's. A Reconciler sets it on the Kustomizations a build
// produces (Result.Objects) when their substitute values were
// substituted from a Secret, as a parent Kustomization passes a
// cluster's variables on to its children; LoadVariables then treats
// those variables as a Secret's, so the child's plans mask them too.
const SecretSubstitutesAnnotation = "kustomize.helmfleet.io/secret-substitutes"

// leaves marks what, in one value of a built object, came from Secret
// variables: all of it, or some map entries, map keys and list elements.
type leaves struct {
	// all: the whole value.
	all bool
	// fields are the entries (by key written in the source) that hold
	// something from a Secret.
	fields map[string]*leaves
	// keys are the keys (as built) that came from a Secret, with their
	// values.
	keys map[string]bool
	// items are list elements by index; names the name field of each
	// element that is a map with one, to find it on the live side.
	items []*leaves
	names []string
}

// secretLeaves compares an object as substituted (real) with the same
// object substituted with two sets of placeholders for the Secret
// variables (a, b): whatever differs, by value, type or shape, came from
// a Secret. Nil when nothing did.
func secretLeaves(real, a, b any) *leaves {
	switch r := real.(type) {
	case map[string]any:
		am, ok1 := a.(map[string]any)
		bm, ok2 := b.(map[string]any)
		if !ok1 || !ok2 {
			return &leaves{all: true}
		}
		var n *leaves
		for k, v := range r {
			av, ina := am[k]
			bv, inb := bm[k]
			if !ina || !inb {
				n = n.ensure()
				n.keys[k] = true
				continue
			}
			if c := secretLeaves(v, av, bv); c != nil {
				n = n.ensure()
				n.fields[k] = c
			}
		}
		return n
	case []any:
		al, ok1 := a.([]any)
		bl, ok2 := b.([]any)
		if !ok1 || !ok2 || len(al) != len(r) || len(bl) != len(r) {
			return &leaves{all: true}
		}
		var n *leaves
		for i, v := range r {
			c := secretLeaves(v, al[i], bl[i])
			if c == nil {
				continue
			}
			if n == nil {
				n = &leaves{items: make([]*leaves, len(r)), names: make([]string, len(r))}
			}
			n.items[i] = c
			if m, ok := v.(map[string]any); ok {
				n.names[i], _ = m["name"].(string)
			}
		}
		return n
	default:
		if reflect.DeepEqual(real, a) && reflect.DeepEqual(real, b) {
			return nil
		}
		return &leaves{all: true}
	}
}

func (n *leaves) ensure() *leaves {
	if n == nil {
		n = &leaves{}
	}
	if n.fields == nil {
		n.fields = map[string]*leaves{}
		n.keys = map[string]bool{}
	}
	return n
}

// merge adds what o marks to n (two objects of the same id).
func (n *leaves) merge(o *leaves) *leaves {
	switch {
	case n == nil:
		return o
	case o == nil:
		return n
	case n.all || o.all:
		return &leaves{all: true}
	}
	out := &leaves{}
	if n.fields != nil || o.fields != nil {
		out = out.ensure()
		for _, x := range []*leaves{n, o} {
			for k, c := range x.fields {
				out.fields[k] = out.fields[k].merge(c)
			}
			for k := range x.keys {
				out.keys[k] = true
			}
		}
	}
	if n.items != nil || o.items != nil {
		if len(n.items) != len(o.items) && n.items != nil && o.items != nil {
			return &leaves{all: true}
		}
		size := max(len(n.items), len(o.items))
		out.items, out.names = make([]*leaves, size), make([]string, size)
		for i := range size {
			for _, x := range []*leaves{n, o} {
				if i < len(x.items) && x.items[i] != nil {
					out.items[i] = out.items[i].merge(x.items[i])
					out.names[i] = x.names[i]
				}
			}
		}
	}
	return out
}

// placeholders returns lookups that stand a distinct placeholder in for
// each Secret variable: two sets that differ in length, case and first
// letter, so that no function of the value (a slice, a length, a case
// change, a pattern) gives the same text for the real value and both.
func placeholders(secretVars map[string]bool, base lookupFunc) (a, b lookupFunc) {
	names := slices.Sorted(maps.Keys(secretVars))
	pa, pb := map[string]string{}, map[string]string{}
	for i, n := range names {
		pa[n] = "HfSecretA" + strconv.Itoa(i) + "Z"
		pb[n] = "hfsecretb" + strconv.Itoa(i) + strings.Repeat("q", 60)
	}
	with := func(p map[string]string) lookupFunc {
		return func(name string) (string, bool) {
			if v, ok := p[name]; ok {
				return v, true
			}
			return base(name)
		}
	}
	return with(pa), with(pb)
}

// treeOf substitutes text with lookup and reads the result as JSON-like
// data; nil when it does not read.
func treeOf(text string, lookup lookupFunc) any {
	out, err := substitute(text, lookup)
	if err != nil {
		return nil
	}
	j, err := yaml.YAMLToJSON([]byte(out))
	if err != nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		return nil
	}
	return v
}

// objectKey identifies an object by group, kind, namespace and name.
func objectKey(group, kind, namespace, name string) string {
	return group + "/" + kind + "/" + namespace + "/" + name
}

// secretMarks are, for one build, the leaves of each object that came
// from Secret variables (by objectKey), and the values of those
// variables.
type secretMarks struct {
	objects map[string]*leaves
	values  map[string]bool
}

// of returns the marks of o; nil when it holds nothing from a Secret.
func (s *secretMarks) of(o *unstructured.Unstructured) *leaves {
	if s == nil {
		return nil
	}
	return s.objects[objectKey(o.GroupVersionKind().Group, o.GetKind(), o.GetNamespace(), o.GetName())]
}

// named reports whether an object of kind, namespace and name (of any
// group) holds values from Secrets.
func (s *secretMarks) named(kind, namespace, name string) bool {
	for key := range s.objects {
		if strings.HasSuffix(key, "/"+kind+"/"+namespace+"/"+name) {
			return true
		}
	}
	return false
}

// sensitive reports whether errors about o may quote Secret values: it
// holds values substituted from Secrets, or it is a Secret.
func (s *secretMarks) sensitive(o *unstructured.Unstructured) bool {
	return isSecret(o) || s.of(o) != nil
}

func isSecret(o *unstructured.Unstructured) bool {
	return o != nil && o.GetKind() == "Secret" && o.GroupVersionKind().Group == ""
}

// hider renders objects as a plan shows them: no server bookkeeping, no
// status, and every value that came from a Secret masked in the object
// tree before it is written out.
type hider struct {
	marks *secretMarks
}

func newHider(marks *secretMarks) *hider { return &hider{marks: marks} }

// pair renders the live object and what would be applied (either may be
// nil), masked at the same places on both sides: the leaves the build
// substituted from Secrets (the live side holds the value of the last
// apply, which may be a rotated Secret's old value), a Secret's data and
// stringData, kubectl's last-applied copy of a masked object, and any
// string equal to a Secret variable's value or to a masked leaf's.
func (h *hider) pair(live, after *unstructured.Unstructured, built *unstructured.Unstructured) (string, string, error) {
	l, a := bare(live), bare(after)
	var n *leaves
	if built != nil {
		n = h.marks.of(built)
	}
	secret := isSecret(built) || isSecret(live) || isSecret(after)
	if n != nil || secret {
		lm, am := objectMap(l), objectMap(a)
		if n != nil && n.all {
			// The object's shape came from a Secret: show its identity.
			l, a = wholly(l, a)
			lm, am = objectMap(l), objectMap(a)
		} else if n != nil {
			values := map[string]bool{}
			collect(builtMap(built), n, values)
			maskPair(lm, am, lm != nil, am != nil, n)
			equalTo(lm, values)
			equalTo(am, values)
		}
		if secret {
			for _, f := range []string{"data", "stringData"} {
				lf, _ := lm[f].(map[string]any)
				af, _ := am[f].(map[string]any)
				if lf != nil || af != nil {
					n := &leaves{fields: map[string]*leaves{}}
					for k := range lf {
						n.fields[k] = &leaves{all: true}
					}
					for k := range af {
						n.fields[k] = &leaves{all: true}
					}
					maskPair(lf, af, lf != nil, af != nil, n)
				}
			}
		}
		for _, m := range []map[string]any{lm, am} {
			if md, ok := m["metadata"].(map[string]any); ok {
				if an, ok := md["annotations"].(map[string]any); ok {
					if _, ok := an[lastApplied]; ok {
						an[lastApplied] = secretValue
					}
				}
			}
		}
	}
	if h.marks != nil && len(h.marks.values) > 0 {
		equalTo(objectMap(l), h.marks.values)
		equalTo(objectMap(a), h.marks.values)
	}
	before, err := render(l)
	if err != nil {
		return "", "", err
	}
	text, err := render(a)
	return before, text, err
}

// wholly replaces what live and after hold but their identity by one
// masked value.
func wholly(live, after *unstructured.Unstructured) (*unstructured.Unstructured, *unstructured.Unstructured) {
	var lv, av any
	if live != nil {
		lv = live.Object
	}
	if after != nil {
		av = after.Object
	}
	lm, am := markers(lv, av, live != nil, after != nil)
	only := func(o *unstructured.Unstructured, m any) *unstructured.Unstructured {
		if o == nil {
			return nil
		}
		c := &unstructured.Unstructured{Object: map[string]any{"content": m}}
		c.SetAPIVersion(o.GetAPIVersion())
		c.SetKind(o.GetKind())
		c.SetNamespace(o.GetNamespace())
		c.SetName(o.GetName())
		return c
	}
	return only(live, lm), only(after, am)
}

func objectMap(o *unstructured.Unstructured) map[string]any {
	if o == nil {
		return nil
	}
	return o.Object
}

func builtMap(o *unstructured.Unstructured) any {
	if o == nil {
		return nil
	}
	return o.Object
}

// bare is a copy of o without the server's bookkeeping and status.
func bare(o *unstructured.Unstructured) *unstructured.Unstructured {
	if o == nil {
		return nil
	}
	c := o.DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	delete(c.Object, "status")
	return c
}

func render(o *unstructured.Unstructured) (string, error) {
	if o == nil {
		return "", nil
	}
	data, err := yaml.Marshal(o.Object)
	return string(data), err
}

// collect adds to values the non-empty strings (and numbers, as text)
// that n marks in v.
func collect(v any, n *leaves, values map[string]bool) {
	if n == nil || v == nil {
		return
	}
	if n.all {
		walkLeaves(v, func(s string) {
			if s != "" {
				values[s] = true
			}
		})
		return
	}
	switch t := v.(type) {
	case map[string]any:
		for k, c := range n.fields {
			collect(t[k], c, values)
		}
		for k := range n.keys {
			values[k] = true
		}
	case []any:
		for i, c := range n.items {
			if i < len(t) {
				collect(t[i], c, values)
			}
		}
	}
}

// walkLeaves calls f with every scalar of v as text.
func walkLeaves(v any, f func(string)) {
	switch t := v.(type) {
	case map[string]any:
		for _, e := range t {
			walkLeaves(e, f)
		}
	case []any:
		for _, e := range t {
			walkLeaves(e, f)
		}
	case string:
		f(t)
	case nil, bool:
	default:
		f(fmt.Sprint(t))
	}
}

// equalTo masks, in place, every scalar of v whose text is one of values.
func equalTo(v any, values map[string]bool) {
	if len(values) == 0 {
		return
	}
	// masked is e, or the marker when e is a scalar to mask.
	masked := func(e any) any {
		switch e.(type) {
		case map[string]any, []any:
			equalTo(e, values)
		case nil, bool:
		default:
			if values[scalarText(e)] {
				return secretValue
			}
		}
		return e
	}
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = masked(e)
		}
	case []any:
		for i, e := range t {
			t[i] = masked(e)
		}
	}
}

func scalarText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// markers are what stand for a masked value on each side.
func markers(live, after any, hasLive, hasAfter bool) (any, any) {
	if hasLive && hasAfter && !reflect.DeepEqual(live, after) {
		return secretOld, secretNew
	}
	return secretValue, secretValue
}

// maskPair masks, in place where it can, what n marks in the live value
// and the value to apply, and returns them (a masked scalar or a wholly
// masked value is replaced).
func maskPair(live, after any, hasLive, hasAfter bool, n *leaves) (any, any) {
	if n == nil {
		return live, after
	}
	if n.all {
		return markers(live, after, hasLive, hasAfter)
	}
	lm, _ := live.(map[string]any)
	am, _ := after.(map[string]any)
	for k, c := range n.fields {
		lv, lok := lm[k]
		av, aok := am[k]
		nl, na := maskPair(lv, av, lok, aok, c)
		if lok {
			lm[k] = nl
		}
		if aok {
			am[k] = na
		}
	}
	if len(n.keys) > 0 {
		maskKeys(lm, am, n)
	}
	ll, _ := live.([]any)
	al, _ := after.([]any)
	for i, c := range n.items {
		if c == nil {
			continue
		}
		li, ai := element(ll, i, n.names[i]), element(al, i, n.names[i])
		var lv, av any
		if li >= 0 {
			lv = ll[li]
		}
		if ai >= 0 {
			av = al[ai]
		}
		nl, na := maskPair(lv, av, li >= 0, ai >= 0, c)
		if li >= 0 {
			ll[li] = nl
		}
		if ai >= 0 {
			al[ai] = na
		}
	}
	return live, after
}

// element finds, in list, the element of the built list's index i: the
// one with the same name field if it has one, else the one at i; -1 when
// there is none.
func element(list []any, i int, name string) int {
	if name != "" {
		for j, e := range list {
			if m, ok := e.(map[string]any); ok && m["name"] == name {
				return j
			}
		}
		return -1
	}
	if i < len(list) {
		return i
	}
	return -1
}

// maskKeys masks the keys of one map that came from a Secret, and their
// values: on the side to apply the keys the build substituted; on the
// live side every key that is not a key the build wrote from literal
// text (the old keys after a rotation). Each masked key reads "(secret
// key N)", the same N for the same key on both sides, numbered by a hash
// order that says nothing of the keys themselves.
func maskKeys(lm, am map[string]any, n *leaves) {
	plain := map[string]bool{}
	for k := range am {
		if !n.keys[k] {
			plain[k] = true
		}
	}
	var secret []string
	for k := range am {
		if n.keys[k] {
			secret = append(secret, k)
		}
	}
	for k := range lm {
		if !plain[k] && !slices.Contains(secret, k) {
			secret = append(secret, k)
		}
	}
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return hex.EncodeToString(sum[:])
	}
	slices.SortFunc(secret, func(x, y string) int { return strings.Compare(hash(x), hash(y)) })
	for i, k := range secret {
		label := fmt.Sprintf("(secret key %d)", i+1)
		lv, lok := lm[k]
		av, aok := am[k]
		nl, na := markers(lv, av, lok, aok)
		if lok {
			delete(lm, k)
			lm[label] = nl
		}
		if aok {
			delete(am, k)
			am[label] = na
		}
	}
}

// withheld returns release.Withhold's error for a Kustomization.
func withheld(k *release.Kustomization, err error, step, origin string) error {
	return release.Withhold(err, "Kustomization "+k.Namespace+"/"+k.Name, step, origin)
}

// objectName is "Kind namespace/name".
func objectName(ref release.ObjectRef) string {
	if ref.Namespace == "" {
		return ref.Kind + " " + ref.Name
	}
	return ref.Kind + " " + ref.Namespace + "/" + ref.Name
}

// sensitiveRefs are the objects of objs that hold values from Secrets,
// or are Secrets.
func sensitiveRefs(objs []*unstructured.Unstructured, marks *secretMarks) map[release.ObjectRef]bool {
	out := map[release.ObjectRef]bool{}
	for _, o := range objs {
		if marks.sensitive(o) {
			ref := release.RefOf(o)
			ref.Version = "" // spec.healthChecks may name another version
			out[ref] = true
		}
	}
	return out
}

// withheldStatus stands for the status message of an object that holds
// values from Secrets.
const withheldStatus = "(status message withheld: the object holds values from Secrets)"

// withheldMessages replaces the status messages of the sensitive
// objects.
func withheldMessages(objs []release.ObjectStatus, sensitive map[release.ObjectRef]bool) []release.ObjectStatus {
	for i := range objs {
		ref := objs[i].Object
		ref.Version = ""
		if sensitive[ref] && objs[i].Message != "" {
			objs[i].Message = withheldStatus
		}
	}
	return objs
}

// annotate sets SecretSubstitutesAnnotation on the decoded Kustomizations
// whose spec.postBuild.substitute values came from Secrets, and
// release.SecretFieldsAnnotation on the decoded HelmReleases that hold
// values substituted from Secrets.
func (s *secretMarks) annotate(objs *release.Objects) {
	if s == nil || objs == nil {
		return
	}
	for _, rel := range objs.Releases {
		n := s.objects[objectKey(release.Group, "HelmRelease", rel.Namespace, rel.Name)]
		release.MarkSecretFields(rel, n.pointers("")...)
	}
	for _, k := range objs.Kustomizations {
		n := s.objects[objectKey(release.KustomizationGroup, release.KustomizationKind, k.Namespace, k.Name)]
		if n == nil || k.Spec.PostBuild == nil {
			continue
		}
		var names []string
		for _, name := range slices.Sorted(maps.Keys(k.Spec.PostBuild.Substitute)) {
			if n.under("spec", "postBuild", "substitute", name) {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			continue
		}
		if k.Annotations == nil {
			k.Annotations = map[string]string{}
		}
		if prev := k.Annotations[SecretSubstitutesAnnotation]; prev != "" {
			names = append(strings.Split(prev, ","), names...)
			slices.Sort(names)
			names = slices.Compact(names)
		}
		k.Annotations[SecretSubstitutesAnnotation] = strings.Join(names, ",")
	}
}

// pointers are the JSON pointers (under prefix) of what n marks: a value
// from a Secret, or the map holding a key from a Secret (the pointer
// names the map, never the key). Only keys written in the source appear
// in them.
func (n *leaves) pointers(prefix string) []string {
	if n == nil {
		return nil
	}
	if n.all || len(n.keys) > 0 {
		return []string{prefix}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(n.fields)) {
		tok := strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
		out = append(out, n.fields[k].pointers(prefix+"/"+tok)...)
	}
	for i, c := range n.items {
		out = append(out, c.pointers(prefix+"/"+strconv.Itoa(i))...)
	}
	return out
}

// under reports whether anything at path (map keys) came from a Secret:
// the value there or any part of it, its key, or a value that holds it.
func (n *leaves) under(path ...string) bool {
	for _, p := range path {
		if n == nil {
			return false
		}
		if n.all {
			return true
		}
		if n.keys[p] {
			return true
		}
		n = n.fields[p]
	}
	return n != nil
}
