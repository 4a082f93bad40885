package fleettest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// Member describes one in-memory member cluster.
type Member struct {
	// Name is the cluster's name; required and unique.
	Name string
	// Labels are the cluster's labels, which placement selects on.
	Labels map[string]string
	// KubeVersion is the Kubernetes version the cluster reports, as
	// "v1.29.4" or "1.29"; empty: memory.DefaultKubeVersion().
	KubeVersion string
	// Health scripts readiness (see ImageNeverReady and ChartNeverReady);
	// nil: everything is ready at once.
	Health memory.HealthFunc
	// Faults fails chosen calls into the cluster (see memory.FailNth);
	// nil: none.
	Faults memory.Fault
	// Options are further options for memory.New.
	Options []memory.Option
}

// Config is what New builds a test fleet from.
type Config struct {
	// Members are the member clusters; at least one.
	Members []Member
	// Charts serves the releases' charts (see NewCharts); default the
	// Podinfo chart at 6.5.0.
	Charts reconcile.ChartGetter
	// Reconciler configures the reconciler; its Charts is Config.Charts
	// and its PollInterval defaults to a millisecond, since in-memory
	// members are ready at once or never.
	Reconciler reconcile.Config
	// Fleet configures the fleet; its Members and Reconciler are set by
	// New.
	Fleet fleet.Config
}

// Fleet is a release/fleet Fleet over in-memory members, with each
// member's cluster at hand for assertions and for changing health or
// reachability mid-test.
type Fleet struct {
	*fleet.Fleet
	// Reconciler is the reconciler the fleet runs on each member.
	Reconciler *reconcile.Reconciler
	clusters   map[string]*memory.Cluster
}

// New builds the fleet. The error names the member or setting at fault.
func New(cfg Config) (*Fleet, error) {
	if len(cfg.Members) == 0 {
		return nil, fmt.Errorf("fleettest: Config.Members is empty")
	}
	f := &Fleet{clusters: map[string]*memory.Cluster{}}
	members := make([]release.Member, 0, len(cfg.Members))
	for i, m := range cfg.Members {
		if m.Name == "" {
			return nil, fmt.Errorf("fleettest: Config.Members[%d].Name is empty", i)
		}
		if _, dup := f.clusters[m.Name]; dup {
			return nil, fmt.Errorf("fleettest: Config.Members[%d].Name %q is given twice", i, m.Name)
		}
		c := NewCluster(m)
		f.clusters[m.Name] = c
		members = append(members, release.Member{Cluster: c, Facts: policy.Cluster{Name: m.Name, Labels: m.Labels}})
	}
	rc := cfg.Reconciler
	rc.Charts = cfg.Charts
	if rc.Charts == nil {
		rc.Charts = NewCharts(Podinfo(""))
	}
	if rc.PollInterval == 0 {
		rc.PollInterval = time.Millisecond
	}
	rec, err := reconcile.New(rc)
	if err != nil {
		return nil, fmt.Errorf("fleettest: %w", err)
	}
	fc := cfg.Fleet
	fc.Members, fc.Reconciler = members, rec
	f.Fleet, err = fleet.New(fc)
	if err != nil {
		return nil, fmt.Errorf("fleettest: %w", err)
	}
	f.Reconciler = rec
	return f, nil
}

// NewCluster returns the in-memory cluster m describes, for a test of one
// cluster.
func NewCluster(m Member) *memory.Cluster {
	opts := []memory.Option{memory.WithKubeVersion(m.KubeVersion)}
	if m.Health != nil {
		opts = append(opts, memory.WithHealth(m.Health))
	}
	c := memory.New(m.Name, append(opts, m.Options...)...)
	if m.Faults != nil {
		c.SetFaults(m.Faults)
	}
	return c
}

// Cluster returns the member called name, or nil.
func (f *Fleet) Cluster(name string) *memory.Cluster { return f.clusters[name] }

// Names returns the members' names, sorted.
func (f *Fleet) Names() []string {
	out := make([]string, 0, len(f.clusters))
	for n := range f.clusters {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Ready returns the status of the Ready condition of the release
// namespace/name on the member as the fleet last recorded it: "True",
// "False", "Unknown", or "" when the fleet never ran it there.
func (f *Fleet) Ready(member, namespace, name string) string {
	st, ok := f.Status(fleet.Key{Cluster: member, Namespace: namespace, Name: name})
	if !ok {
		return ""
	}
	c := st.GetCondition(release.ConditionReady)
	if c == nil {
		return ""
	}
	return string(c.Status)
}

// Run plans in and applies the plan, as a controller's one pass over
// the fleet does; the report is nil only when planning failed.
func (f *Fleet) Run(ctx context.Context, in fleet.Inputs, opts fleet.ApplyOptions) (*fleet.ApplyReport, error) {
	plan, err := f.Plan(ctx, in)
	if err != nil {
		return nil, err
	}
	return f.Apply(ctx, plan, opts)
}

// Inputs decodes, defaults and validates YAML documents (HelmReleases,
// policies, Kustomizations, …) as release.Load does, and sorts them into
// a fleet's inputs.
func Inputs(yaml string) (fleet.Inputs, error) {
	objs, err := release.Load(strings.NewReader(yaml))
	if err != nil {
		return fleet.Inputs{}, err
	}
	return fleet.InputsOf(objs), nil
}
