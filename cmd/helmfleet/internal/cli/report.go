package cli

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// Report is what plan and diff found, per member.
type Report struct {
	// Base and Head are the repositories compared (Head alone for plan).
	Base string `json:"base,omitempty"`
	Head string `json:"head"`
	// Members are every member of the fleet, in name order.
	Members []MemberReport `json:"members"`
	// Errors are the problems no member's unit holds (placement, …).
	Errors []string `json:"errors,omitempty"`
}

// MemberReport is one member's units.
type MemberReport struct {
	// Name is the member's.
	Name string `json:"name"`
	// Units are the units that change (or, for plan, every unit), in
	// kind, namespace and name order.
	Units []UnitReport `json:"units"`
}

// UnitReport is one unit (a HelmRelease or a Kustomization) on one
// member.
type UnitReport struct {
	// Unit is "HelmRelease namespace/name" or "Kustomization namespace/name".
	Unit string `json:"unit"`
	// State is the unit's state on the member now, Action what applying
	// would do ("none" when nothing).
	State  string `json:"state"`
	Action string `json:"action"`
	// Chart is a release's chart@version.
	Chart string `json:"chart,omitempty"`
	// Objects are the objects that change: "Kind/namespace/name create".
	Objects []string `json:"objects,omitempty"`
	// Diff is the unified diff of the objects, Secret values masked.
	Diff string `json:"diff,omitempty"`
	// Error is why the unit cannot be planned.
	Error string `json:"error,omitempty"`
}

// Changed reports whether the unit changes anything or fails.
func (u UnitReport) Changed() bool {
	return u.Action != string(reconcile.ActionNone) || u.Error != "" || len(u.Objects) > 0
}

// Changes reports whether any unit of the report changes or any error.
func (r *Report) Changes() bool {
	for _, m := range r.Members {
		for _, u := range m.Units {
			if u.Changed() {
				return true
			}
		}
	}
	return len(r.Errors) > 0
}

// HasErrors reports whether a unit or the report has an error.
func (r *Report) HasErrors() bool {
	for _, m := range r.Members {
		for _, u := range m.Units {
			if u.Error != "" {
				return true
			}
		}
	}
	return len(r.Errors) > 0
}

// reportOf sums p up per member; all keeps the units that change
// nothing. members names every member, so one without units shows.
func reportOf(p *fleet.Plan, memberNames []string, all bool) *Report {
	byMember := map[string]*MemberReport{}
	r := &Report{}
	for _, n := range memberNames {
		r.Members = append(r.Members, MemberReport{Name: n, Units: []UnitReport{}})
	}
	for i := range r.Members {
		byMember[r.Members[i].Name] = &r.Members[i]
	}
	add := func(member string, u UnitReport) {
		if !all && !u.Changed() {
			return
		}
		if m := byMember[member]; m != nil {
			m.Units = append(m.Units, u)
		}
	}
	inUnit := map[error]bool{}
	for _, it := range p.Items {
		u := UnitReport{Unit: "HelmRelease " + it.Release.Namespace + "/" + it.Release.Name, State: string(it.State),
			Action: string(it.Action), Diff: it.Diff, Objects: diffObjects(it.Diff)}
		if it.Chart != "" {
			u.Chart = it.Chart + "@" + it.Version
		}
		if it.Err != nil {
			u.Error = it.Err.Error()
			inUnit[it.Err] = true
		}
		add(it.Cluster, u)
	}
	for _, kp := range p.Kustomizations {
		u := UnitReport{Unit: "Kustomization " + kp.Kustomization.Namespace + "/" + kp.Kustomization.Name,
			State: string(kp.State), Action: string(kp.Action), Diff: kp.Diff}
		if kp.Action == fleet.ActionApply && kp.State == reconcile.StateInSync {
			u.Action = string(reconcile.ActionNone) // as Plan.Table says it
		}
		for _, o := range kp.Objects {
			if o.Action == kustomize.PlanCreate || o.Action == kustomize.PlanUpdate {
				u.Objects = append(u.Objects, o.Object.Kind+"/"+o.Object.Namespace+"/"+o.Object.Name+" "+o.Action)
			}
		}
		for _, o := range kp.Prune {
			u.Objects = append(u.Objects, o.Kind+"/"+o.Namespace+"/"+o.Name+" prune")
		}
		if kp.Err != nil {
			u.Error = kp.Err.Error()
			inUnit[kp.Err] = true
		}
		add(kp.Cluster, u)
	}
	for i := range r.Members {
		us := r.Members[i].Units
		sort.SliceStable(us, func(a, b int) bool { return unitLess(us[a].Unit, us[b].Unit) })
	}
	for _, e := range p.Errors {
		var ie *fleet.ItemError
		if errors.As(e, &ie) && inUnit[ie.Err] {
			continue
		}
		r.Errors = append(r.Errors, e.Error())
	}
	return r
}

// unitLess orders "Kind namespace/name" by kind (Kustomizations first,
// as they produce the releases), then namespace and name.
func unitLess(a, b string) bool {
	ka, kb := strings.HasPrefix(a, "Kustomization "), strings.HasPrefix(b, "Kustomization ")
	if ka != kb {
		return ka
	}
	return a < b
}

// diffObjects names the objects a release's diff changes, from its
// per-object headers ("--- Kind/namespace/name").
func diffObjects(diff string) []string {
	var out []string
	var from string
	for line := range strings.SplitSeq(diff, "\n") {
		switch {
		case strings.HasPrefix(line, "--- "):
			from = strings.TrimSpace(strings.TrimPrefix(line, "--- "))
		case strings.HasPrefix(line, "+++ "):
			to := strings.TrimSpace(strings.TrimPrefix(line, "+++ "))
			switch {
			case from == "/dev/null":
				out = append(out, to+" create")
			case to == "/dev/null":
				out = append(out, from+" delete")
			default:
				out = append(out, to+" update")
			}
		}
	}
	return out
}

// memberNames returns the names of spec's members, sorted.
func memberNames(spec *FleetFile) []string {
	out := make([]string, 0, len(spec.Members))
	for _, m := range spec.Members {
		out = append(out, m.Name)
	}
	sort.Strings(out)
	return out
}

// only keeps member's part of r ("" keeps all).
func (r *Report) only(member string) error {
	if member == "" {
		return nil
	}
	for _, m := range r.Members {
		if m.Name == member {
			r.Members = []MemberReport{m}
			return nil
		}
	}
	return fmt.Errorf("--member %s: not a member of the fleet", member)
}
