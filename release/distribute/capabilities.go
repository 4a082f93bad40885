package distribute

import (
	"context"
	"fmt"
	"sort"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/helmfleet/helmfleet/release"
)

var _ release.CapabilitiesReader = (*Distributor)(nil)

// CapabilitiesReport says what the capabilities of a Distributor's
// render-once were made of, member by member.
type CapabilitiesReport struct {
	// KubeVersion is the version the chart is rendered for: the lowest
	// among the members that report theirs.
	KubeVersion string
	// Lowest names the members that run KubeVersion, sorted.
	Lowest []string
	// APIVersions is how many API versions every reporting member serves.
	APIVersions int
	// Members are every member, sorted by name.
	Members []MemberCapabilities
	// FromHub is true when no member reported its capabilities and the
	// hub's were used (its CapabilitiesReader, else the capabilities of
	// its Helm configuration).
	FromHub bool
}

// MemberCapabilities is one member's part of a CapabilitiesReport.
type MemberCapabilities struct {
	// Member is the member's name.
	Member string
	// KubeVersion is the version it reported; empty when Ignored.
	KubeVersion string
	// APIVersions is how many API versions it reported.
	APIVersions int
	// Ignored says why the member's capabilities did not count: it does
	// not implement release.CapabilitiesReader, its report failed (the
	// error), or its version does not parse. Empty when they counted.
	Ignored string
}

// Capabilities returns what a chart rendered once for all members sees as
// .Capabilities, so that the one manifest is valid on every member:
// KubeVersion is the lowest version among the members that implement
// release.CapabilitiesReader, and APIVersions are the API versions all of
// them serve (their intersection). Members that do not implement it, or
// whose report fails, are left out (CapabilitiesOf says which and why): a
// member that is down does not stop the release from reaching the others.
// When no member reports, the hub's capabilities are used: its
// CapabilitiesReader, else nil, which tells the Reconciler to use those
// of the Distributor's Helm configuration (the hub's).
//
// The chart's own CRDs are not here, as a cluster's discovery does not
// list them before they are installed: the Reconciler's renders add the
// API versions of a chart's crds/ unless its CRD policy is Skip, and the
// Helm configuration of HelmConfig adds them when Helm creates them.
//
// Karmada, by contrast, renders against its own API server: the Karmada
// control plane's Kubernetes version and API groups, which need be none
// of the members'.
func (d *Distributor) Capabilities(ctx context.Context) (*chartutil.Capabilities, error) {
	caps, _, err := d.CapabilitiesOf(ctx)
	return caps, err
}

// CapabilitiesOf returns the capabilities of Capabilities and a report of
// which member gave what.
func (d *Distributor) CapabilitiesOf(ctx context.Context) (*chartutil.Capabilities, *CapabilitiesReport, error) {
	report := &CapabilitiesReport{Members: make([]MemberCapabilities, len(d.members))}
	all := make([]*chartutil.Capabilities, len(d.members))
	err := d.eachMember(ctx, nil, func(ctx context.Context, i int) error {
		mc := &report.Members[i]
		mc.Member = d.members[i].Facts.Name
		cr, ok := d.members[i].Cluster.(release.CapabilitiesReader)
		if !ok {
			mc.Ignored = "it does not implement release.CapabilitiesReader"
			return nil
		}
		caps, err := cr.Capabilities(ctx)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			mc.Ignored = "its capabilities could not be read: " + err.Error()
			return nil
		case caps == nil:
			mc.Ignored = "it reported no capabilities"
			return nil
		}
		if _, err := semver.NewVersion(caps.KubeVersion.Version); err != nil {
			mc.Ignored = fmt.Sprintf("its Kubernetes version %q does not parse: %v", caps.KubeVersion.Version, err)
			return nil
		}
		mc.KubeVersion, mc.APIVersions = caps.KubeVersion.Version, len(caps.APIVersions)
		all[i] = caps
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("distributor %s: capabilities: %w", d.name, err)
	}
	merged := mergeCapabilities(all)
	if merged == nil {
		report.FromHub = true
		if cr, ok := d.hub.(release.CapabilitiesReader); ok {
			caps, err := cr.Capabilities(ctx)
			if err != nil {
				return nil, nil, fmt.Errorf("distributor %s: hub capabilities: %w", d.name, err)
			}
			if caps != nil {
				report.KubeVersion, report.APIVersions = caps.KubeVersion.Version, len(caps.APIVersions)
			}
			return caps, report, nil
		}
		return nil, report, nil
	}
	report.KubeVersion, report.APIVersions = merged.KubeVersion.Version, len(merged.APIVersions)
	for i, c := range all {
		if c != nil && sameVersion(c.KubeVersion.Version, merged.KubeVersion.Version) {
			report.Lowest = append(report.Lowest, d.members[i].Facts.Name)
		}
	}
	return merged, report, nil
}

// mergeCapabilities returns the lowest KubeVersion and the intersection
// of the API versions of the non-nil capabilities; nil when there are
// none. The versions must parse.
func mergeCapabilities(all []*chartutil.Capabilities) *chartutil.Capabilities {
	var out *chartutil.Capabilities
	var lowest *semver.Version
	counts := map[string]int{}
	n := 0
	for _, c := range all {
		if c == nil {
			continue
		}
		n++
		v, _ := semver.NewVersion(c.KubeVersion.Version)
		if out == nil || v.LessThan(lowest) {
			if out == nil {
				out = c.Copy()
			}
			out.KubeVersion, lowest = c.KubeVersion, v
		}
		countOnce(counts, c.APIVersions)
	}
	if out == nil {
		return nil
	}
	out.APIVersions = make(chartutil.VersionSet, 0, len(counts))
	for av, c := range counts {
		if c == n {
			out.APIVersions = append(out.APIVersions, av)
		}
	}
	sort.Strings(out.APIVersions)
	return out
}

// countOnce adds one to the count of each version of set, once however
// often set lists it (sorted sets, as clusters report them, need no
// memory for that).
func countOnce(counts map[string]int, set []string) {
	if sort.StringsAreSorted(set) {
		for i, av := range set {
			if i == 0 || set[i-1] != av {
				counts[av]++
			}
		}
		return
	}
	seen := make(map[string]bool, len(set))
	for _, av := range set {
		if !seen[av] {
			seen[av] = true
			counts[av]++
		}
	}
}

func sameVersion(a, b string) bool {
	va, erra := semver.NewVersion(a)
	vb, errb := semver.NewVersion(b)
	return erra == nil && errb == nil && va.Equal(vb)
}
