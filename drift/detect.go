package drift

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Detect compares the desired objects of a release with the live objects
// the caller listed (one list per kind is enough: objects are matched by
// group, kind, namespace and name, not by version), under cfg's rules.
//
// Each desired object is Missing, Modified, Unchanged or Excluded; with
// Options.Extra set, live objects it selects that nothing desired names
// are Extra. Results are sorted by group, kind, namespace and name. Bad
// input (nil objects, objects without apiVersion, kind or name, the same
// object twice in one list) is an *ObjectError. With ModeDisabled nothing
// is compared and the report is empty.
//
// Namespaces are compared as given: default the namespace of namespaced
// desired objects (as Helm does) before calling Detect.
func Detect(desired, live []*unstructured.Unstructured, cfg *Config) (*Report, error) {
	if cfg == nil {
		return nil, ErrNoConfig
	}
	rep := &Report{Mode: cfg.mode}
	if cfg.mode == ModeDisabled {
		return rep, nil
	}
	liveRefs := make([]ObjectRef, len(live))
	liveIdx := make(map[objKey]int, len(live))
	for i, u := range live {
		ref, err := refOf(u, "live", i)
		if err != nil {
			return nil, err
		}
		k := keyOf(ref)
		if _, dup := liveIdx[k]; dup {
			return nil, &ObjectError{Side: "live", Index: i, Object: ref, Field: "metadata.name", Value: ref.Name, Err: ErrDuplicateObject}
		}
		liveIdx[k] = i
		liveRefs[i] = ref
	}
	used := make([]bool, len(live))
	d := newDetector(cfg)
	rep.Objects = make([]ObjectResult, 0, len(desired))
	for i, u := range desired {
		ref, err := refOf(u, "desired", i)
		if err != nil {
			return nil, err
		}
		var lu *unstructured.Unstructured
		li, ok := liveIdx[keyOf(ref)]
		if ok {
			used[li] = true
			lu = live[li]
		}
		res, err := d.compareObject(ref, u, lu, i, li)
		if err != nil {
			return nil, err
		}
		rep.Objects = append(rep.Objects, res)
	}
	if cfg.extra != nil {
		for i, u := range live {
			if used[i] || !cfg.extra.matches(liveRefs[i], u) {
				continue
			}
			rep.Objects = append(rep.Objects, d.extraObject(liveRefs[i], u))
		}
	}
	rep.Objects = sortResults(rep.Objects)
	// Sorted, a desired object listed twice sits next to itself (extra
	// objects are never desired, so they cannot collide).
	for i := 1; i < len(rep.Objects); i++ {
		if keyOf(rep.Objects[i].Object) == keyOf(rep.Objects[i-1].Object) {
			return nil, duplicateDesired(desired, keyOf(rep.Objects[i].Object))
		}
	}
	rep.Rules = ruleReports(cfg, rep.Objects)
	return rep, nil
}

// sortResults orders results by group, kind, namespace and name. It sorts
// indices and moves each result once: results are large and there may be
// tens of thousands.
func sortResults(rs []ObjectResult) []ObjectResult {
	less := func(a, b ObjectResult) int { return compareRefs(a.Object, b.Object) }
	if slices.IsSortedFunc(rs, less) {
		return rs
	}
	order := make([]int32, len(rs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return compareRefs(rs[a].Object, rs[b].Object) })
	out := make([]ObjectResult, len(rs))
	for i, j := range order {
		out[i] = rs[j]
	}
	return out
}

// duplicateDesired names the second occurrence of k in desired.
func duplicateDesired(desired []*unstructured.Unstructured, k objKey) error {
	seen := false
	for i, u := range desired {
		ref, _ := refOf(u, "desired", i)
		if keyOf(ref) != k {
			continue
		}
		if seen {
			return &ObjectError{Side: "desired", Index: i, Object: ref, Field: "metadata.name", Value: ref.Name, Err: ErrDuplicateObject}
		}
		seen = true
	}
	return ErrDuplicateObject
}

// Compare compares one desired object with its live counterpart (nil when
// it does not exist) under cfg's rules, as Detect does for each pair. The
// two must be the same object: a different group, kind, namespace or name
// is an *ObjectError wrapping ErrKindMismatch. Compare compares even when
// cfg's mode is disabled.
func Compare(desired, live *unstructured.Unstructured, cfg *Config) (ObjectResult, error) {
	if cfg == nil {
		return ObjectResult{}, ErrNoConfig
	}
	ref, err := refOf(desired, "desired", -1)
	if err != nil {
		return ObjectResult{}, err
	}
	if live != nil {
		lref, err := refOf(live, "live", -1)
		if err != nil {
			return ObjectResult{}, err
		}
		if keyOf(lref) != keyOf(ref) {
			field, value := "kind", lref.Kind
			switch {
			case lref.Group != ref.Group:
				field, value = "apiVersion", lref.Group+"/"+lref.Version
			case lref.Kind != ref.Kind:
			case lref.Namespace != ref.Namespace:
				field, value = "metadata.namespace", lref.Namespace
			default:
				field, value = "metadata.name", lref.Name
			}
			return ObjectResult{}, &ObjectError{Side: "live", Index: -1, Object: lref, Field: field, Value: value,
				Err: fmt.Errorf("%w: desired is %s", ErrKindMismatch, ref)}
		}
	}
	return newDetector(cfg).compareObject(ref, desired, live, -1, -1)
}

type objKey struct{ group, kind, namespace, name string }

func keyOf(r ObjectRef) objKey { return objKey{r.Group, r.Kind, r.Namespace, r.Name} }

func refOf(u *unstructured.Unstructured, side string, index int) (ObjectRef, error) {
	if u == nil || u.Object == nil {
		return ObjectRef{}, &ObjectError{Side: side, Index: index, Field: "object", Value: "nil", Err: ErrInvalidObject}
	}
	var ref ObjectRef
	apiVersion, _ := u.Object["apiVersion"].(string)
	ref.Kind, _ = u.Object["kind"].(string)
	md, _ := u.Object["metadata"].(map[string]any)
	ref.Name, _ = md["name"].(string)
	ref.Namespace, _ = md["namespace"].(string)
	if g, v, ok := strings.Cut(apiVersion, "/"); ok {
		ref.Group, ref.Version = g, v
	} else {
		ref.Version = apiVersion
	}
	switch {
	case apiVersion == "":
		return ref, &ObjectError{Side: side, Index: index, Object: ref, Field: "apiVersion", Value: "", Err: ErrInvalidObject}
	case ref.Kind == "":
		return ref, &ObjectError{Side: side, Index: index, Object: ref, Field: "kind", Value: "", Err: ErrInvalidObject}
	case ref.Name == "":
		return ref, &ObjectError{Side: side, Index: index, Object: ref, Field: "metadata.name", Value: "", Err: ErrInvalidObject}
	}
	return ref, nil
}

// detector holds the scratch state of one Detect call: the tries of
// ignored paths per combination of matching rules, and the walker.
type detector struct {
	cfg     *Config
	tries   map[string]*pathNode
	names   map[string]matchedRules
	key     []byte
	matched []int
	w       walker
}

// matchedRules is one combination of matching rules, shared by every
// result it applies to.
type matchedRules struct {
	idx   []int
	names []string
}

func newDetector(cfg *Config) *detector {
	return &detector{cfg: cfg}
}

// rules returns the matched rules as shared, clipped slices.
func (d *detector) rules() matchedRules {
	d.key = d.key[:0]
	for _, idx := range d.matched {
		d.key = strconv.AppendInt(d.key, int64(idx), 10)
		d.key = append(d.key, ',')
	}
	if m, ok := d.names[string(d.key)]; ok {
		return m
	}
	m := matchedRules{idx: slices.Clone(d.matched), names: make([]string, len(d.matched))}
	for i, idx := range d.matched {
		m.names[i] = d.ruleName(idx)
	}
	m.idx, m.names = slices.Clip(m.idx), slices.Clip(m.names)
	if d.names == nil {
		d.names = make(map[string]matchedRules)
	}
	d.names[string(d.key)] = m
	return m
}

// match collects the rules whose target selects obj into d.matched
// (ignore rules by index, then manager rules after them) and returns the
// first ignore rule that ignores the whole object, or -1.
func (d *detector) match(ref ObjectRef, obj *unstructured.Unstructured) int {
	d.matched = d.matched[:0]
	whole := -1
	for i := range d.cfg.ignore {
		r := &d.cfg.ignore[i]
		if r.target.matches(ref, obj) {
			d.matched = append(d.matched, i)
			if r.whole && whole < 0 {
				whole = i
			}
		}
	}
	for i := range d.cfg.managers {
		if d.cfg.managers[i].target.matches(ref, obj) {
			d.matched = append(d.matched, len(d.cfg.ignore)+i)
		}
	}
	return whole
}

func (d *detector) ruleName(i int) string {
	if i < len(d.cfg.ignore) {
		return d.cfg.ignore[i].name
	}
	return d.cfg.managers[i-len(d.cfg.ignore)].name
}

// start fills in the rule bookkeeping of a result, and excludes it when
// the opt-out annotation or a whole-object rule says so.
func (d *detector) start(ref ObjectRef, objs ...*unstructured.Unstructured) (ObjectResult, bool) {
	res := ObjectResult{Object: ref}
	whole := d.match(ref, objs[0])
	if len(d.matched) > 0 {
		m := d.rules()
		res.ruleIdx, res.Rules = m.idx, m.names
	}
	for _, o := range objs {
		if o != nil && optedOut(o.Object) {
			res.Status = StatusExcluded
			res.Reason = DisableAnnotation + ": " + DisableValue
			return res, true
		}
	}
	if whole >= 0 {
		res.Status = StatusExcluded
		res.Reason = d.cfg.ignore[whole].name + ` ignores the whole object (path "")`
		return res, true
	}
	return res, false
}

func (d *detector) extraObject(ref ObjectRef, live *unstructured.Unstructured) ObjectResult {
	res, excluded := d.start(ref, live)
	if !excluded {
		res.Status = StatusExtra
	}
	return res
}

// compareObject compares a desired object with its live counterpart (nil
// if none); di and li are their indices in Detect's lists, for errors.
func (d *detector) compareObject(ref ObjectRef, desired, live *unstructured.Unstructured, di, li int) (ObjectResult, error) {
	if d.cfg.helm != nil {
		desired = withHelmMetadata(desired, d.cfg.helm)
	}
	res, excluded := d.start(ref, desired, live)
	if excluded {
		return res, nil
	}
	if live == nil {
		res.Status = StatusMissing
		res.private = newPrivate(resultData{desired: desired})
		return res, nil
	}
	dobj := desired.Object
	if ref.isSecret() {
		dobj = secretAsStored(dobj)
	}
	w := &d.w
	w.steps, w.diffs, w.err = w.steps[:0], w.diffs[:0], nil
	w.compareRoot(dobj, live.Object, d.trie())
	if w.err != nil {
		e := *w.err
		e.Object, e.Index = ref, di
		if e.Side == "live" {
			e.Index = li
		}
		return ObjectResult{}, &e
	}
	owners := ownersOf(live.Object)
	if len(d.cfg.override) > 0 || d.cfg.owner != "" && owners.applies(d.cfg.owner) {
		w.overridden(dobj, live.Object, d.trie(), owners, d.cfg)
	}
	if len(w.diffs) == 0 {
		res.Status = StatusUnchanged
		return res, nil
	}
	slices.SortStableFunc(w.diffs, func(a, b diff) int { return compareSteps(a.steps, b.steps) })
	var correction, removals Patch
	secret := ref.isSecret()
	change := func(df diff, managers []string) FieldChange {
		// Keys of elements in a Secret's data would show its values.
		labels := !secret || !isSecretDataPath(df.path)
		fc := FieldChange{Field: fieldOf(df.steps, labels), Path: df.path, Op: df.op, Live: df.live, Desired: df.desired, Managers: managers}
		if secret {
			fc = maskChange(fc)
		}
		return fc
	}
	if cap(w.managers) < len(w.diffs) {
		w.managers = make([][]string, 0, len(w.diffs))
	}
	kept, managers := w.diffs[:0], w.managers[:0]
	for _, df := range w.diffs {
		var m []string
		if df.op != "add" {
			m = owners.managersOf(live.Object, df.steps)
		}
		if d.ignoredManager(res.ruleIdx, m) {
			res.Ignored = append(res.Ignored, change(df, m))
			continue
		}
		kept, managers = append(kept, df), append(managers, m)
	}
	if d.cfg.rationalize && len(kept) > 0 {
		r := rationalizer{live: live.Object, trie: d.trie()}
		kept = r.rationalize(kept)
		managers = managers[:0]
		for _, df := range kept {
			var m []string
			if df.op != "add" {
				m = owners.managersOf(live.Object, df.steps)
			}
			managers = append(managers, m)
		}
	}
	w.managers = managers
	for i, df := range kept {
		res.Changes = append(res.Changes, change(df, managers[i]))
		op := Operation{Op: df.op, Path: df.path, Value: df.desired}
		if df.op == "remove" {
			op.Value = nil
			if last := df.steps[len(df.steps)-1]; last.index != mapStep {
				// Removing a list element shifts the ones after it:
				// elements go last, the highest index first.
				removals = append(removals, op)
				continue
			}
		}
		correction = append(correction, op)
	}
	slices.Reverse(removals)
	correction = append(correction, removals...)
	if len(correction) == 0 {
		res.Status = StatusUnchanged
		return res, nil
	}
	res.Status = StatusModified
	res.private = newPrivate(resultData{correction: correction})
	res.Patch = correction
	if secret {
		res.Patch = maskPatch(correction)
	}
	return res, nil
}

// ignoredManager reports whether a matching manager rule names one of the
// field's live owners.
func (d *detector) ignoredManager(ruleIdx []int, owners []string) bool {
	if len(owners) == 0 {
		return false
	}
	for _, idx := range ruleIdx {
		if idx < len(d.cfg.ignore) {
			continue
		}
		for _, m := range d.cfg.managers[idx-len(d.cfg.ignore)].managers {
			if slices.Contains(owners, m) {
				return true
			}
		}
	}
	return false
}

// trie returns the union of the ignored paths of the matched ignore rules,
// built once per combination of rules. Every matching rule contributes,
// however many have no target.
func (d *detector) trie() *pathNode {
	d.key = d.key[:0]
	for _, idx := range d.matched {
		if idx >= len(d.cfg.ignore) {
			break
		}
		d.key = strconv.AppendInt(d.key, int64(idx), 10)
		d.key = append(d.key, ',')
	}
	if len(d.key) == 0 {
		return nil
	}
	if t, ok := d.tries[string(d.key)]; ok {
		return t
	}
	root := &pathNode{}
	for _, idx := range d.matched {
		if idx >= len(d.cfg.ignore) {
			break
		}
		for _, p := range d.cfg.ignore[idx].paths {
			root.add(p)
		}
	}
	if d.tries == nil {
		d.tries = make(map[string]*pathNode)
	}
	d.tries[string(d.key)] = root
	return root
}

// secretAsStored returns a Secret as the API server stores it: stringData
// merged into data, base64-encoded, stringData winning.
func secretAsStored(obj map[string]any) map[string]any {
	sd, ok := obj["stringData"].(map[string]any)
	if !ok {
		return obj
	}
	out := maps.Clone(obj)
	delete(out, "stringData")
	data, _ := obj["data"].(map[string]any)
	merged := make(map[string]any, len(data)+len(sd))
	maps.Copy(merged, data)
	for k, v := range sd {
		if s, ok := v.(string); ok {
			merged[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
	}
	out["data"] = merged
	return out
}

// compareSteps orders paths: map keys by name before list elements by
// index, appends last, parents before children.
func compareSteps(a, b []step) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		sa, sb := a[i], b[i]
		ma, mb := sa.index == mapStep, sb.index == mapStep
		switch {
		case ma && mb:
			if c := cmp.Compare(sa.key, sb.key); c != 0 {
				return c
			}
		case ma:
			return -1
		case mb:
			return 1
		default:
			if c := cmp.Compare(listOrder(sa), listOrder(sb)); c != 0 {
				return c
			}
		}
	}
	return cmp.Compare(len(a), len(b))
}

func listOrder(s step) int {
	if s.index == appendStep {
		return 1<<31 + int(s.dindex)
	}
	return int(s.index)
}

func ruleReports(cfg *Config, objs []ObjectResult) []RuleReport {
	n := len(cfg.ignore) + len(cfg.managers)
	if n == 0 {
		return nil
	}
	out := make([]RuleReport, n)
	for i, r := range cfg.ignore {
		out[i] = RuleReport{Rule: r.name, Description: r.display}
	}
	for i, r := range cfg.managers {
		desc := fmt.Sprintf("managers %q", r.managers)
		if r.target != nil {
			desc += " on " + r.targetText
		}
		out[len(cfg.ignore)+i] = RuleReport{Rule: r.name, Description: desc}
	}
	for i := range objs {
		for _, idx := range objs[i].ruleIdx {
			out[idx].Objects = append(out[idx].Objects, objs[i].Object)
		}
	}
	return out
}

// withHelmMetadata returns desired with Helm's ownership label and
// annotations set, as helm-controller sets them before diffing. It copies
// only the maps it changes: desired belongs to the caller.
func withHelmMetadata(desired *unstructured.Unstructured, h *HelmRelease) *unstructured.Unstructured {
	obj := maps.Clone(desired.Object)
	md, _ := obj["metadata"].(map[string]any)
	md = maps.Clone(md)
	if md == nil {
		md = map[string]any{}
	}
	set := func(field string, kv ...string) {
		m, _ := md[field].(map[string]any)
		m = maps.Clone(m)
		if m == nil {
			m = make(map[string]any, len(kv)/2)
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		md[field] = m
	}
	set("labels", ManagedByLabel, ManagedByHelm)
	set("annotations", ReleaseNameAnnotation, h.Name, ReleaseNamespaceAnnotation, h.Namespace)
	obj["metadata"] = md
	return &unstructured.Unstructured{Object: obj}
}
