package fleet

import (
	"errors"
	"fmt"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// ValuesFrom says where the fleet reads the ConfigMaps and Secrets a
// release's spec.valuesFrom names: on the hub, the one place the fleet's
// inputs come from, or on each member, as a helm-controller running on
// that member would.
type ValuesFrom string

const (
	// ValuesFromHub reads valuesFrom with the hub reconciler's
	// values.Reader (ReconcilerConfig.Values): one set of objects for every
	// member, per-member differences declared by override policies. The
	// default.
	ValuesFromHub ValuesFrom = "hub"
	// ValuesFromMember reads valuesFrom on each member, through the
	// member's own cluster (release.NewObjectValues over it): each member
	// gets the values of the objects it holds, as on platforms that place
	// per-cluster ConfigMaps on each cluster, and in Karmada's
	// per-member Flux, where each member's helm-controller reads its local
	// ConfigMaps.
	ValuesFromMember ValuesFrom = "member"
)

// ValuesFromAnnotation on a Release chooses, for that release, where
// valuesFrom is read: "hub" or "member". It is read from each member's
// copy after override policies, so an annotationsOverrider can choose per
// member. Without it, Config.ValuesFrom decides.
const ValuesFromAnnotation = "fleet.helmfleet.io/values-from"

// valid reports whether v is a known mode.
func (v ValuesFrom) valid() bool { return v == ValuesFromHub || v == ValuesFromMember }

// ValuesFromError reports a release whose valuesFrom could not be read:
// it names the member, the release and where the objects were read (the
// hub or the member); Err names the reference (kind, name, key) and why.
type ValuesFromError struct {
	// Key is the release on its member.
	Key Key
	// From is where valuesFrom was read.
	From ValuesFrom
	// Err is the reconciler's error.
	Err error
}

// Error implements error.
func (e *ValuesFromError) Error() string {
	where := "on the hub"
	if e.From == ValuesFromMember {
		where = "on member " + e.Key.Cluster
	}
	return fmt.Sprintf("member %s: release %s/%s: valuesFrom read %s: %v", e.Key.Cluster, e.Key.Namespace, e.Key.Name, where, e.Err)
}

// Unwrap returns the reconciler's error.
func (e *ValuesFromError) Unwrap() error { return e.Err }

// valuesFromOf returns where k's copy rel reads valuesFrom.
func (f *Fleet) valuesFromOf(k Key, rel *release.Release) (ValuesFrom, error) {
	v, ok := rel.Annotations[ValuesFromAnnotation]
	if !ok {
		return f.cfg.ValuesFrom, nil
	}
	if m := ValuesFrom(v); m.valid() {
		return m, nil
	}
	return "", fmt.Errorf("member %s: release %s/%s: metadata.annotations[%s]: %q is neither %q nor %q", k.Cluster, k.Namespace, k.Name, ValuesFromAnnotation, v, ValuesFromHub, ValuesFromMember)
}

// reconcilerFor returns the reconciler that reads valuesFrom where from
// says, for k's member.
func (f *Fleet) reconcilerFor(k Key, from ValuesFrom) (*reconcile.Reconciler, error) {
	if from != ValuesFromMember {
		return f.rec, nil
	}
	if r, ok := f.memberRec[k.Cluster]; ok {
		return r, nil
	}
	return nil, fmt.Errorf("member %s: release %s/%s: valuesFrom is read on the member (%s), which needs fleet Config.ReconcilerConfig so that the fleet can build a reconciler reading each member; Config.Reconciler reads one place only", k.Cluster, k.Namespace, k.Name, ValuesFromAnnotation)
}

// nameValuesFrom wraps a values error of k's reconcile or plan so that it
// says where valuesFrom was read; other errors pass unchanged.
func nameValuesFrom(k Key, from ValuesFrom, err error) error {
	var se *reconcile.StageError
	if err == nil || !errors.As(err, &se) || se.Reason != release.ReasonValuesError {
		return err
	}
	return &ValuesFromError{Key: k, From: from, Err: err}
}

// buildReconcilers makes the hub reconciler and, with a
// ReconcilerConfig, one per member whose values.Reader reads that
// member's cluster.
func (f *Fleet) buildReconcilers(cfg Config) error {
	switch {
	case cfg.Reconciler != nil && cfg.ReconcilerConfig != nil:
		return errors.New("fleet: config: set Reconciler or ReconcilerConfig, not both")
	case cfg.Reconciler != nil:
		f.rec = cfg.Reconciler
		return nil
	case cfg.ReconcilerConfig == nil:
		return errors.New("fleet: config: Reconciler or ReconcilerConfig is required")
	}
	rec, err := reconcile.New(*cfg.ReconcilerConfig)
	if err != nil {
		return fmt.Errorf("fleet: config: ReconcilerConfig: %w", err)
	}
	f.rec = rec
	f.memberRec = map[string]*reconcile.Reconciler{}
	for _, m := range f.members {
		mc := *cfg.ReconcilerConfig
		mc.Values = release.NewObjectValues(m.Cluster)
		r, err := reconcile.New(mc)
		if err != nil {
			return fmt.Errorf("fleet: config: reconciler of member %s: %w", m.Facts.Name, err)
		}
		f.memberRec[m.Facts.Name] = r
	}
	return nil
}
