package fleet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
)

// DefaultRootSource is the source Repository.Root serves when
// Repository.RootSource is empty: the GitRepository `flux bootstrap`
// creates.
const DefaultRootSource = "GitRepository/flux-system/flux-system"

// ArtifactGeneratorGroup and ArtifactGeneratorKind name Flux 2.7's
// ArtifactGenerator, which produces ExternalArtifacts from other sources.
const (
	ArtifactGeneratorGroup = "source.extensions.fluxcd.io"
	ArtifactGeneratorKind  = "ArtifactGenerator"
)

// Repository is a Flux repository as the fleet's input (Config.Repository):
// the tree of the bootstrap source, the trees of the other sources its
// Kustomizations name, and the resolver of the charts its releases name.
// With it the fleet runs everything in the repository: each Kustomization
// reads its spec.sourceRef from Sources (per member where MemberSources
// says so), and the HelmRepository, OCIRepository and HelmChart objects any
// Kustomization produces on a member are that member's chart sources from
// then on, for the releases planned after it; nothing is walked in
// advance. A Kustomization whose source kind and name the member's
// registry does not serve is a plan error naming it; so is an
// ArtifactGenerator whose ExternalArtifacts are not registered (the fleet
// does not run ArtifactGenerators: it serves their ExternalArtifacts from
// Sources, and does not apply the generator itself).
type Repository struct {
	// Root is the tree of the bootstrap source (RootSource).
	Root fs.FS
	// Revision is Root's revision, e.g. "main@sha1:…".
	Revision string
	// RootSource is Root's key, as kustomize.SourceKey spells it;
	// default DefaultRootSource.
	RootSource string
	// Sources are the trees of the other sources (GitRepository, Bucket,
	// OCIRepository of manifests, ExternalArtifact) by
	// kustomize.SourceKey, "Kind/namespace/name", on every member.
	Sources kustomize.MapSources
	// MemberSources are, by member name, trees that replace those of
	// Sources (or Root) on that member.
	MemberSources map[string]kustomize.MapSources
	// Charts resolves the chart of each release from its source objects
	// on its member (see reconcile.Charts); required.
	Charts source.Resolver
}

// sourcesOf returns the registry of member: Root, Sources, then
// MemberSources[member] over them.
func (r *Repository) sourcesOf(member string) kustomize.MapSources {
	out := kustomize.MapSources{}
	if r.Root != nil {
		key := r.RootSource
		if key == "" {
			key = DefaultRootSource
		}
		out[key] = kustomize.Source{FS: r.Root, Revision: r.Revision}
	}
	for k, s := range r.Sources {
		out[k] = s
	}
	for k, s := range r.MemberSources[member] {
		out[k] = s
	}
	return out
}

// useRepository fills cfg's reconciler and Kustomization configs from
// cfg.Repository, refusing what would conflict with it.
func (f *Fleet) useRepository(cfg *Config) error {
	repo := cfg.Repository
	if repo == nil {
		return nil
	}
	switch {
	case repo.Charts == nil:
		return errors.New("fleet: config: Repository.Charts is required")
	case cfg.Reconciler != nil:
		return errors.New("fleet: config: with Repository, set ReconcilerConfig (its Charts empty), not Reconciler")
	case cfg.Kustomize != nil:
		return errors.New("fleet: config: with Repository, set KustomizeConfig (its Sources empty) or neither, not Kustomize")
	case cfg.ReconcilerConfig != nil && cfg.ReconcilerConfig.Charts != nil:
		return errors.New("fleet: config: with Repository, ReconcilerConfig.Charts must be empty: Repository.Charts resolves the charts")
	case cfg.KustomizeConfig != nil && cfg.KustomizeConfig.Sources != nil:
		return errors.New("fleet: config: with Repository, KustomizeConfig.Sources must be empty: Repository serves the sources")
	}
	rc := reconcile.Config{}
	if cfg.ReconcilerConfig != nil {
		rc = *cfg.ReconcilerConfig
	}
	rc.Charts = reconcile.ChartGetterFunc(func(ctx context.Context, rel *release.Release) (*reconcile.Chart, error) {
		ms, _ := ctx.Value(memberSourcesKey{}).(*memberSources)
		if ms == nil {
			return reconcile.Charts(repo.Charts, nil).GetChart(ctx, rel)
		}
		return reconcile.Charts(ms.resolver(repo.Charts), ms.objs).GetChart(ctx, rel)
	})
	cfg.ReconcilerConfig = &rc
	kc := kustomize.ReconcilerConfig{}
	if cfg.KustomizeConfig != nil {
		kc = *cfg.KustomizeConfig
	}
	own := kc.Exclude
	kc.Exclude = func(u *unstructured.Unstructured) bool {
		return isArtifactGenerator(u) || (own != nil && own(u))
	}
	// Sources is set per member by buildKustomizers.
	kc.Sources = kustomize.MapSources{}
	cfg.KustomizeConfig = &kc
	f.repo = repo
	return nil
}

// isArtifactGenerator reports whether u is a Flux ArtifactGenerator.
func isArtifactGenerator(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == ArtifactGeneratorGroup && gvk.Kind == ArtifactGeneratorKind
}

// memberSourcesKey is the context key of the chart sources of the member
// a release is planned or applied on (*memberSources).
type memberSourcesKey struct{}

// withMemberSources returns ctx carrying the chart sources plan has for
// member.
func withMemberSources(ctx context.Context, plan *Plan, member string) context.Context {
	if plan == nil || plan.sources == nil {
		return ctx
	}
	return context.WithValue(ctx, memberSourcesKey{}, &memberSources{member: member, objs: plan.sources[member],
		rules: plan.rules[member], mirrored: plan.mirrored[member]})
}

// addSources records the chart sources objs holds as member's, after those
// already there (the first of a namespace/name keeps it), as the
// member's override policies and mirror rules make them, and what they
// rewrote.
func (p *Plan) addSources(member string, objs *release.Objects, rules sourceRules) {
	if len(objs.HelmRepositories)+len(objs.OCIRepositories)+len(objs.HelmCharts) == 0 {
		return
	}
	objs, done, errs := rules.apply(member, objs)
	p.Errors = append(p.Errors, errs...)
	p.recordMirrored(member, rules.mirrors, done)
	if p.sources == nil {
		p.sources = map[string]*release.Objects{}
	}
	s := p.sources[member]
	if s == nil {
		s = &release.Objects{}
		p.sources[member] = s
	}
	s.HelmRepositories = append(s.HelmRepositories, objs.HelmRepositories...)
	s.OCIRepositories = append(s.OCIRepositories, objs.OCIRepositories...)
	s.HelmCharts = append(s.HelmCharts, objs.HelmCharts...)
}

// UnservedArtifactError is an ArtifactGenerator a Kustomization produces
// whose ExternalArtifact the member's Repository sources do not serve.
type UnservedArtifactError struct {
	// Member is the member's name.
	Member string
	// Generator is the ArtifactGenerator, namespace/name.
	Generator string
	// Field is the field path of the artifact, e.g. "spec.artifacts[0].name".
	Field string
	// Artifact is the ExternalArtifact's key, "ExternalArtifact/namespace/name".
	Artifact string
}

// Error names the member, the generator, the field and the artifact.
func (e *UnservedArtifactError) Error() string {
	return fmt.Sprintf("member %s: ArtifactGenerator %s: %s: %s is not served: the fleet does not run ArtifactGenerators; register its tree in Repository.Sources (or MemberSources) under %q",
		e.Member, e.Generator, e.Field, e.Artifact, e.Artifact)
}

// checkGenerators returns an error for each ExternalArtifact the
// ArtifactGenerators of plain declare that member's sources do not serve.
func (f *Fleet) checkGenerators(member string, plain []*unstructured.Unstructured) []error {
	if f.repo == nil {
		return nil
	}
	served := f.repo.sourcesOf(member)
	var errs []error
	for _, u := range plain {
		if !isArtifactGenerator(u) {
			continue
		}
		arts, _, _ := unstructured.NestedSlice(u.Object, "spec", "artifacts")
		for i, a := range arts {
			m, _ := a.(map[string]any)
			name, _ := m["name"].(string)
			key := "ExternalArtifact/" + u.GetNamespace() + "/" + name
			if _, ok := served[key]; !ok {
				errs = append(errs, &UnservedArtifactError{Member: member, Generator: u.GetNamespace() + "/" + u.GetName(),
					Field: fmt.Sprintf("spec.artifacts[%d].name", i), Artifact: key})
			}
		}
	}
	return errs
}
