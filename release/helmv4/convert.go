package helmv4

import (
	"encoding/json"
	"errors"
	"fmt"

	chart3 "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	release3 "helm.sh/helm/v3/pkg/release"
	driver3 "helm.sh/helm/v3/pkg/storage/driver"
	"helm.sh/helm/v4/pkg/chart/common"
	chart4 "helm.sh/helm/v4/pkg/chart/v2"
	ri4 "helm.sh/helm/v4/pkg/release"
	release4 "helm.sh/helm/v4/pkg/release/v1"
	driver4 "helm.sh/helm/v4/pkg/storage/driver"
)

// ApplyMethodLabel is the storage label under which the Helm v4 engine
// keeps a release record's apply method ("ssa" or "csa", Helm v4's
// Release.ApplyMethod) in the records it writes through a Helm v3
// storage driver, whose record format has no such field. The Helm v4
// engine reads it back; Helm v3 keeps it as a custom label and ignores
// it. A record without it was applied client-side (Helm v4's rule).
const ApplyMethodLabel = "helmfleet.io/helm-apply-method"

// chartToV4 converts a Helm v3 chart to Helm v4's chart (API v2): the
// same fields, and its dependencies converted the same way.
func chartToV4(c *chart3.Chart) (*chart4.Chart, error) {
	if c == nil {
		return nil, nil
	}
	out := &chart4.Chart{Raw: files4(c.Raw), Templates: files4(c.Templates), Files: files4(c.Files),
		Values: c.Values, Schema: c.Schema}
	if c.Metadata != nil {
		out.Metadata = &chart4.Metadata{}
		if err := roundTrip(c.Metadata, out.Metadata); err != nil {
			return nil, fmt.Errorf("chart %s: metadata: %w", c.Name(), err)
		}
	}
	if c.Lock != nil {
		out.Lock = &chart4.Lock{}
		if err := roundTrip(c.Lock, out.Lock); err != nil {
			return nil, fmt.Errorf("chart %s: Chart.lock: %w", c.Name(), err)
		}
	}
	deps := make([]*chart4.Chart, 0, len(c.Dependencies()))
	for _, d := range c.Dependencies() {
		cd, err := chartToV4(d)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", c.Name(), err)
		}
		deps = append(deps, cd)
	}
	out.SetDependencies(deps...)
	return out, nil
}

func files4(in []*chart3.File) []*common.File {
	if in == nil {
		return nil
	}
	out := make([]*common.File, len(in))
	for i, f := range in {
		out[i] = &common.File{Name: f.Name, Data: f.Data}
	}
	return out
}

// capabilitiesToV4 converts the cluster's capabilities.
func capabilitiesToV4(c *chartutil.Capabilities) (*common.Capabilities, error) {
	if c == nil {
		return nil, nil
	}
	kv, err := common.ParseKubeVersion(c.KubeVersion.Version)
	if err != nil {
		return nil, fmt.Errorf("capabilities: kube version %q: %w", c.KubeVersion.Version, err)
	}
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	caps.APIVersions = common.VersionSet(append([]string(nil), c.APIVersions...))
	return caps, nil
}

// releaseToV4 converts a Helm v3 release record to Helm v4's: the same
// JSON, the labels, and the apply method from ApplyMethodLabel.
func releaseToV4(r *release3.Release) (*release4.Release, error) {
	if r == nil {
		return nil, nil
	}
	out := &release4.Release{}
	if err := roundTrip(r, out); err != nil {
		return nil, fmt.Errorf("release %s/%s.v%d: to Helm v4: %w", r.Namespace, r.Name, r.Version, err)
	}
	for k, v := range r.Labels {
		if k == ApplyMethodLabel {
			out.ApplyMethod = v
			continue
		}
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		out.Labels[k] = v
	}
	return out, nil
}

// releaseToV3 converts a Helm v4 release record to Helm v3's: the same
// JSON, the labels, and the apply method as ApplyMethodLabel.
func releaseToV3(rls ri4.Releaser) (*release3.Release, error) {
	r, ok := rls.(*release4.Release)
	if !ok {
		return nil, fmt.Errorf("release record of type %T: only Helm v4's release/v1 records are stored", rls)
	}
	if r == nil {
		return nil, nil
	}
	out := &release3.Release{}
	if err := roundTrip(r, out); err != nil {
		return nil, fmt.Errorf("release %s/%s.v%d: to Helm v3: %w", r.Namespace, r.Name, r.Version, err)
	}
	if len(r.Labels) > 0 || r.ApplyMethod != "" {
		out.Labels = make(map[string]string, len(r.Labels)+1)
		for k, v := range r.Labels {
			out.Labels[k] = v
		}
		if r.ApplyMethod != "" {
			out.Labels[ApplyMethodLabel] = r.ApplyMethod
		}
	}
	return out, nil
}

func roundTrip(in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// sentinels pairs Helm v3's storage errors with Helm v4's.
var sentinels = [][2]error{
	{driver3.ErrReleaseNotFound, driver4.ErrReleaseNotFound},
	{driver3.ErrReleaseExists, driver4.ErrReleaseExists},
	{driver3.ErrInvalidKey, driver4.ErrInvalidKey},
	{driver3.ErrNoDeployedReleases, driver4.ErrNoDeployedReleases},
}

// bothErr is an error of one Helm major that also matches the same
// sentinel of the other: its text is the original's.
type bothErr struct {
	err, also error
}

func (e *bothErr) Error() string   { return e.err.Error() }
func (e *bothErr) Unwrap() []error { return []error{e.err, e.also} }

// mapErr makes a storage error of either Helm major match the other's
// sentinel too (errors.Is), so that Helm v4's actions see a missing
// record in the v3 driver, and the reconciler one in Helm v4's errors.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range sentinels {
		switch {
		case errors.Is(err, s[0]) && !errors.Is(err, s[1]):
			return &bothErr{err: err, also: s[1]}
		case errors.Is(err, s[1]) && !errors.Is(err, s[0]):
			return &bothErr{err: err, also: s[0]}
		}
	}
	return err
}
