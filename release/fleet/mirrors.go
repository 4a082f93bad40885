package fleet

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/helmfleet/helmfleet/internal/redact"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/source"
)

// Mirror rewrites the URLs of chart sources on the members it selects,
// as a containerd registry mirror does: for a regional or air-gapped
// registry, or an internal copy of a Helm repository (Config.Mirrors).
//
// It applies to the spec.url of every HelmRepository and OCIRepository
// that serves charts on the member, those of the inputs and those its
// Kustomizations produce, and to the absolute chart URLs an HTTP(S)
// repository's index lists (a relative one resolves against the
// rewritten repository URL already). The first rule that matches wins:
// the rules of the Mirrors that select the member, in the order of
// Config.Mirrors, each Mirror's Rewrites in order. A rule matches a URL
// that equals From or starts with From followed by "/" (so
// "oci://ghcr.io" matches "oci://ghcr.io/x", not "oci://ghcr.io.evil/x");
// a From ending in "/" matches by plain prefix. The matched prefix is
// replaced with To.
//
// Karmada's override policies reach the same sources first: an
// OverridePolicy or ClusterOverridePolicy whose resourceSelectors select
// HelmRepository or OCIRepository objects (source.toolkit.fluxcd.io/v1)
// overrides them per member as it overrides any kind (a plaintext
// replace of /spec/url, for example); the mirror rules then apply to
// what they made.
//
// A rewrite is never hidden: each rewritten source is in Plan.Mirrored
// (and Plan.Table, and the plan's JSON), and a chart that fails to
// resolve through a mirror is a *MirrorError naming the member, the
// source and both URLs. The source objects a Kustomization applies on
// the member keep the URL of the tree; only the fleet's resolution reads
// the rewritten one. A source's spec.insecure is kept as it is.
type Mirror struct {
	// Members names the members it applies to.
	Members []string
	// Selector selects the members it applies to by their labels
	// (Member.Facts.Labels). A member named in Members or matched by
	// Selector is selected; with neither set, every member is.
	Selector *metav1.LabelSelector
	// Rewrites are the prefix rules, tried in order.
	Rewrites []Rewrite
}

// Rewrite is one prefix rule of a Mirror: a URL that starts with From
// is fetched from To followed by the rest of it, e.g. From
// "oci://ghcr.io/" and To "oci://registry.eu.example/ghcr/".
type Rewrite struct {
	// From is the prefix of the original URL, with its scheme
	// (oci://, https:// or http://).
	From string
	// To replaces it; it must have From's scheme, so that a source stays
	// an OCI registry or an HTTP(S) repository.
	To string
}

// MirroredSource is one source a Mirror rewrote on one member: what
// Plan.Mirrored lists.
type MirroredSource struct {
	// Member is the member's name.
	Member string
	// Source is the source object, e.g. "HelmRepository podinfo/podinfo".
	Source string
	// Field is the field rewritten, "spec.url".
	Field string
	// URL is the URL the object holds; Effective the one resolved from;
	// each with its user information and query values masked
	// (redact.URL), as they are shown in plans and errors.
	URL, Effective string
	// By is what rewrote it: the rule of Config.Mirrors,
	// "Mirrors[0].Rewrites[1]", or the override policy,
	// "OverridePolicy namespace/name" (or "ClusterOverridePolicy name").
	By string
}

// String says member, source, field, both URLs and what rewrote it.
func (m MirroredSource) String() string {
	return fmt.Sprintf("member %s: %s: %s: %s mirrored to %s (%s)", m.Member, m.Source, m.Field, m.URL, m.Effective, m.By)
}

// MirrorError is the failure of a chart resolved through a mirror: the
// source's URL, or the chart URL its index lists, was rewritten.
type MirrorError struct {
	// Member is the member's name.
	Member string
	// Source is the source object, e.g. "OCIRepository flux-system/podinfo".
	Source string
	// URL is the original URL, Effective the rewritten one, each with its
	// user information and query values masked (redact.URL).
	URL, Effective string
	// Err is the resolver's error.
	Err error
}

// Error names the member, the source and both URLs.
func (e *MirrorError) Error() string {
	return fmt.Sprintf("member %s: %s: mirror of %s at %s: %v", e.Member, e.Source, e.URL, e.Effective, e.Err)
}

// Unwrap returns the resolver's error.
func (e *MirrorError) Unwrap() error { return e.Err }

// mirrorRule is a Rewrite and where Config.Mirrors has it,
// "Mirrors[i].Rewrites[j]".
type mirrorRule struct {
	Rewrite
	at string
}

// mirrorRules are the rules of one member, in the order they are tried.
type mirrorRules []mirrorRule

// rewrite returns u rewritten by the first rule that matches, and where
// that rule is ("" when none matches).
func (rs mirrorRules) rewrite(u string) (string, string) {
	for _, r := range rs {
		if !strings.HasPrefix(u, r.From) {
			continue
		}
		rest := u[len(r.From):]
		if rest != "" && !strings.HasSuffix(r.From, "/") && !strings.HasPrefix(rest, "/") {
			continue
		}
		return r.To + rest, r.at
	}
	return "", ""
}

// checkMirrors validates cfg.Mirrors and returns the rules of each
// member that has any.
func checkMirrors(cfg Config, members []release.Member) (map[string]mirrorRules, error) {
	if len(cfg.Mirrors) == 0 {
		return nil, nil
	}
	if cfg.Repository == nil {
		return nil, fmt.Errorf("fleet: config: Mirrors: they need Repository, whose sources the fleet resolves charts from")
	}
	out := map[string]mirrorRules{}
	for i, m := range cfg.Mirrors {
		at := fmt.Sprintf("fleet: config: Mirrors[%d]", i)
		var sel labels.Selector
		if m.Selector != nil {
			s, err := metav1.LabelSelectorAsSelector(m.Selector)
			if err != nil {
				return nil, fmt.Errorf("%s.Selector: %w", at, err)
			}
			sel = s
		}
		for j, r := range m.Rewrites {
			if err := checkRewrite(r); err != nil {
				return nil, fmt.Errorf("%s.Rewrites[%d]: %w", at, j, err)
			}
		}
		for _, name := range m.Members {
			if !slices.ContainsFunc(members, func(mb release.Member) bool { return mb.Facts.Name == name }) {
				return nil, fmt.Errorf("%s.Members: %q is not a member", at, name)
			}
		}
		for _, mb := range members {
			all := len(m.Members) == 0 && sel == nil
			if all || slices.Contains(m.Members, mb.Facts.Name) || (sel != nil && sel.Matches(labels.Set(mb.Facts.Labels))) {
				for j, r := range m.Rewrites {
					out[mb.Facts.Name] = append(out[mb.Facts.Name], mirrorRule{Rewrite: r, at: fmt.Sprintf("Mirrors[%d].Rewrites[%d]", i, j)})
				}
			}
		}
	}
	return out, nil
}

// checkRewrite refuses a rule without From or To, or one that changes
// the scheme.
func checkRewrite(r Rewrite) error {
	scheme := func(field, v string) (string, error) {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "oci" && u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return "", fmt.Errorf("%s: %q is not an oci://, https:// or http:// URL prefix with a host", field, v)
		}
		return u.Scheme, nil
	}
	from, err := scheme("From", r.From)
	if err != nil {
		return err
	}
	to, err := scheme("To", r.To)
	if err != nil {
		return err
	}
	if (from == "oci") != (to == "oci") {
		return fmt.Errorf("To: %q turns From %q into another kind of source", r.To, r.From)
	}
	return nil
}

// mirrorSources returns objs with the URLs of its HelmRepositories and
// OCIRepositories rewritten by rules (copies; objs is not modified), and
// what was rewritten.
func mirrorSources(member string, rules mirrorRules, objs *release.Objects) (*release.Objects, []MirroredSource) {
	if len(rules) == 0 {
		return objs, nil
	}
	out := *objs
	var done []MirroredSource
	one := func(kind string, meta metav1.Object, u *string) bool {
		to, at := rules.rewrite(*u)
		if at != "" {
			done = append(done, MirroredSource{Member: member, Source: sourceName(kind, meta.GetNamespace(), meta.GetName()),
				Field: "spec.url", URL: redact.URL(*u), Effective: redact.URL(to), By: at})
			*u = to
		}
		return at != ""
	}
	out.HelmRepositories = slices.Clone(objs.HelmRepositories)
	for i, r := range out.HelmRepositories {
		if c := r.DeepCopy(); one(source.KindHelmRepository, c, &c.Spec.URL) {
			out.HelmRepositories[i] = c
		}
	}
	out.OCIRepositories = slices.Clone(objs.OCIRepositories)
	for i, r := range out.OCIRepositories {
		if c := r.DeepCopy(); one(source.KindOCIRepository, c, &c.Spec.URL) {
			out.OCIRepositories[i] = c
		}
	}
	return &out, done
}

// sourceName names a source object: "Kind namespace/name".
func sourceName(kind, ns, name string) string { return kind + " " + ns + "/" + name }

// memberSources are the chart sources of one member, as the context of a
// release's planning or apply carries them.
type memberSources struct {
	member string
	objs   *release.Objects
	rules  mirrorRules
	// mirrored are the rewritten sources, by Source.
	mirrored map[string]MirroredSource
}

// resolver returns inner wrapped so that the chart URLs an index lists
// are rewritten by the member's rules, and a failure through a mirror is
// a *MirrorError.
func (ms *memberSources) resolver(inner source.Resolver) source.Resolver {
	if len(ms.rules)+len(ms.mirrored) == 0 {
		return inner
	}
	return source.ResolverFunc(func(ctx context.Context, ref source.Ref) (*source.Chart, error) {
		var archive *MirroredSource
		ref.RewriteChartURL = func(u string) string {
			to, at := ms.rules.rewrite(u)
			if at == "" {
				return u
			}
			archive = &MirroredSource{URL: redact.URL(u), Effective: redact.URL(to)}
			return to
		}
		ch, err := inner.Resolve(ctx, ref)
		if err == nil {
			return ch, nil
		}
		name := ""
		switch {
		case ref.OCIRepository != nil:
			name = sourceName(source.KindOCIRepository, ref.OCIRepository.Namespace, ref.OCIRepository.Name)
		case ref.HelmRepository != nil:
			name = sourceName(source.KindHelmRepository, ref.HelmRepository.Namespace, ref.HelmRepository.Name)
		}
		m, ok := ms.mirrored[name]
		switch {
		case archive != nil:
			return nil, &MirrorError{Member: ms.member, Source: name, URL: archive.URL, Effective: archive.Effective, Err: err}
		case ok:
			return nil, &MirrorError{Member: ms.member, Source: name, URL: m.URL, Effective: m.Effective, Err: err}
		}
		return nil, err
	})
}

// mirroredJSON is the JSON form of a MirroredSource.
type mirroredJSON struct {
	Member    string `json:"member"`
	Source    string `json:"source"`
	Field     string `json:"field"`
	URL       string `json:"url"`
	Effective string `json:"effective"`
	By        string `json:"by"`
}

// recordMirrored records the sources rewritten on member (the first of
// a source keeps it, as in addSources) and the member's rules.
func (p *Plan) recordMirrored(member string, rules mirrorRules, done []MirroredSource) {
	if len(rules)+len(done) == 0 {
		return
	}
	if p.rules == nil {
		p.rules, p.mirrored = map[string]mirrorRules{}, map[string]map[string]MirroredSource{}
	}
	if len(rules) > 0 {
		p.rules[member] = rules
	}
	seen := p.mirrored[member]
	if seen == nil {
		seen = map[string]MirroredSource{}
		p.mirrored[member] = seen
	}
	for _, m := range done {
		if _, ok := seen[m.Source]; ok {
			continue
		}
		seen[m.Source] = m
		p.Mirrored = append(p.Mirrored, m)
	}
}
