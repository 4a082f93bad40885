package drift

import "slices"

// overridden adds a "remove" difference for each live field that desired
// does not set and that a server-side apply of desired by
// Config.FieldManager would drop, as helm-controller's dry-run apply
// does:
//
//   - fields Config.OverrideManagers own, alone or with Config.FieldManager:
//     helm-controller hands such fields over to itself before its dry-run
//     apply, which then drops them;
//   - fields that Config.FieldManager's own Apply entry alone owns: the
//     manager applied them once and no longer does.
//
// Metadata and status are left alone (Flux counts no removed label or
// annotation). The walk follows maps and the elements of keyed lists that
// desired sets; a live element whose key desired lacks is removed whole.
func (w *walker) overridden(d, l map[string]any, root *pathNode, owners *fieldOwners, cfg *Config) {
	if root != nil && root.ignored {
		return
	}
	for k, lv := range l {
		switch k {
		case "apiVersion", "kind", "metadata", "status":
			continue
		}
		w.overrideKey(d, k, lv, root, owners, cfg, l)
	}
}

func (w *walker) overrideKey(d map[string]any, k string, lv any, node *pathNode, owners *fieldOwners, cfg *Config, root map[string]any) {
	child := node.child(k)
	if child != nil && child.ignored || len(w.steps) >= MaxDepth {
		return
	}
	w.push(step{key: k, index: mapStep})
	defer w.pop()
	dv, set := d[k]
	if !set || dv == nil {
		if owners.removable(root, w.steps, cfg) {
			w.emit("remove", lv, nil)
		}
		return
	}
	switch dx := dv.(type) {
	case map[string]any:
		if lm, ok := lv.(map[string]any); ok {
			w.overrideMap(dx, lm, child, owners, cfg, root)
		}
	case []any:
		if ll, ok := lv.([]any); ok {
			w.overrideList(k, dx, ll, child, owners, cfg, root)
		}
	}
}

func (w *walker) overrideMap(dm, lm map[string]any, node *pathNode, owners *fieldOwners, cfg *Config, root map[string]any) {
	for lk, lvv := range lm {
		w.overrideKey(dm, lk, lvv, node, owners, cfg, root)
	}
}

// overrideList follows a keyed list: live elements paired with a desired
// one by key are followed as maps, the others are removed when removable.
// A list that cannot be matched by key (as walkKeyed finds) is left
// alone, as are lists without a merge key.
func (w *walker) overrideList(field string, dv, ll []any, node *pathNode, owners *fieldOwners, cfg *Config, root map[string]any) {
	mk, ok := mergeKeyFor(field, dv)
	if !ok || len(dv) > MaxKeyedListLength || len(ll) > MaxKeyedListLength {
		return
	}
	desiredOf := make([]int, len(ll))
	for i := range desiredOf {
		desiredOf[i] = -1
	}
	if alignedList(dv, ll, mk) {
		for j := range dv {
			desiredOf[j] = j
		}
	} else {
		idx := newKeyIndex(dv, ll, mk, w.hashSeed())
		if idx == nil {
			return
		}
		for j := range dv {
			i, ok := idx.pair(j)
			if !ok {
				return
			}
			if i >= 0 {
				desiredOf[i] = j
			}
		}
	}
	for i, le := range ll {
		lm, ok := le.(map[string]any)
		if !ok {
			continue
		}
		j := desiredOf[i]
		if j < 0 {
			w.push(step{index: int32(i), dindex: int32(i), elem: lm})
			if owners.removable(root, w.steps, cfg) {
				w.emit("remove", le, nil)
			}
			w.pop()
			continue
		}
		child := node.childIndex(j)
		if child != nil && child.ignored {
			continue
		}
		dm, _ := dv[j].(map[string]any)
		w.push(step{index: int32(i), dindex: int32(j), elem: dm})
		w.overrideMap(dm, lm, child, owners, cfg, root)
		w.pop()
	}
}

// removable reports whether a server-side apply by cfg.FieldManager of an
// object without the field at steps would drop it: an override manager
// owns it and nobody else but the field manager does, or the field
// manager's Apply entry owns it and nobody else does.
func (fo *fieldOwners) removable(live map[string]any, steps []step, cfg *Config) bool {
	var override, applied, updated bool
	for _, o := range fo.owners {
		if !fo.owns(o.fields, live, steps) {
			continue
		}
		switch {
		case slices.Contains(cfg.override, o.manager):
			override = true
		case o.manager == cfg.owner && o.apply:
			applied = true
		case o.manager == cfg.owner:
			updated = true
		default:
			return false
		}
	}
	return override || applied && !updated
}
