package fleet

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/internal/redact"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/source"
)

// sourceRules are what makes a member's copy of a chart source: the
// override policies (OverridePolicy and ClusterOverridePolicy select
// HelmRepository and OCIRepository objects as they select any kind),
// then the member's Config.Mirrors rules.
type sourceRules struct {
	engine  *policy.Engine
	facts   policy.Cluster
	mirrors mirrorRules
}

// sourceRules returns the rules of member's chart sources under engine,
// the engine of policies (left out when they hold no override policy:
// there is nothing to convert the sources for).
func (f *Fleet) sourceRules(engine *policy.Engine, policies policy.Set, member string) sourceRules {
	if len(policies.Override)+len(policies.ClusterOverride) == 0 {
		engine = nil
	}
	return sourceRules{engine: engine, facts: f.byName[member].Facts, mirrors: f.mirrors[member]}
}

// apply returns objs with its HelmRepositories and OCIRepositories as the
// override policies and mirror rules make them on member (copies; objs is
// not modified), the URLs they rewrote, and an error for each source the
// overrides break (left out, so that nothing is fetched from where the
// policies did not mean).
func (r sourceRules) apply(member string, objs *release.Objects) (*release.Objects, []MirroredSource, []error) {
	var done []MirroredSource
	var errs []error
	out := *objs
	if r.engine != nil {
		out.HelmRepositories = overrideSources(r, member, objs.HelmRepositories, source.KindHelmRepository, &done, &errs)
		out.OCIRepositories = overrideSources(r, member, objs.OCIRepositories, source.KindOCIRepository, &done, &errs)
	}
	mirrored, more := mirrorSources(member, r.mirrors, &out)
	for _, m := range more {
		i := slices.IndexFunc(done, func(d MirroredSource) bool { return d.Source == m.Source })
		if i < 0 {
			done = append(done, m)
			continue
		}
		// Overridden, then mirrored: one record, from the URL of the
		// object to the one resolved from.
		done[i].Effective, done[i].By = m.Effective, done[i].By+", then "+m.By
	}
	return mirrored, done, errs
}

// overrideSources returns list as the override policies make it on
// member, recording in done each URL they rewrote and in errs each
// source they break.
func overrideSources[T any, P interface {
	*T
	validator
	GetNamespace() string
	GetName() string
}](r sourceRules, member string, list []P, kind string, done *[]MirroredSource, errs *[]error) []P {
	out := make([]P, 0, len(list))
	for _, s := range list {
		name := sourceName(kind, s.GetNamespace(), s.GetName())
		u, err := unitToUnstructured(s, source.APIVersion, kind)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("member %s: %s: %w", member, name, err))
			continue
		}
		o, applied, err := r.engine.Override(u, r.facts)
		if err == nil && len(applied) == 0 {
			out = append(out, s)
			continue
		}
		var c *T
		if err == nil {
			c, err = unitFromUnstructured[T](o)
		}
		if err == nil {
			err = P(c).Validate()
		}
		if err != nil {
			*errs = append(*errs, fmt.Errorf("member %s: %s: after override policies: %w", member, name, err))
			continue
		}
		before, _, _ := unstructured.NestedString(u.Object, "spec", "url")
		after, _, _ := unstructured.NestedString(o.Object, "spec", "url")
		if before != after {
			*done = append(*done, MirroredSource{Member: member, Source: name, Field: "spec.url", URL: redact.URL(before), Effective: redact.URL(after), By: urlOverrider(applied)})
		}
		out = append(out, P(c))
	}
	return out
}

// validator is a source object that validates itself.
type validator interface{ Validate() error }

// urlOverrider names the last override policy that wrote /spec/url (or
// the last applied).
func urlOverrider(applied []policy.Applied) string {
	by := applied[len(applied)-1].Policy
	for _, a := range applied {
		for _, t := range a.Targets {
			if t == "/spec/url" {
				by = a.Policy
			}
		}
	}
	return by.String()
}
