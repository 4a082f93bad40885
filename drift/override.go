package drift

import "slices"

// overridden adds a "remove" difference for each live field that desired
// does not set and that Config.OverrideManagers own, alone or with
// Config.FieldManager: helm-controller hands such fields over to itself
// before its dry-run apply, which then drops them. Metadata and status
// are left alone (Flux counts no removed label or annotation), and so are
// list elements: the walk follows maps only.
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
	if set && dv != nil {
		dm, dok := dv.(map[string]any)
		lm, lok := lv.(map[string]any)
		if dok && lok {
			for lk, lvv := range lm {
				w.overrideKey(dm, lk, lvv, child, owners, cfg, root)
			}
		}
		return
	}
	if overrideOwned(owners.managersOf(root, w.steps), cfg) {
		w.emit("remove", lv, nil)
	}
}

// overrideOwned reports whether an override manager owns a field and
// nobody else but the field manager does.
func overrideOwned(managers []string, cfg *Config) bool {
	found := false
	for _, m := range managers {
		switch {
		case slices.Contains(cfg.override, m):
			found = true
		case m == cfg.owner:
		default:
			return false
		}
	}
	return found
}
