package kustomize

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/source"
	"github.com/helmfleet/helmfleet/values"
)

// DefaultFieldManager is the field manager of server-side applies when
// ReconcilerConfig.FieldManager is empty: Flux's.
const DefaultFieldManager = "kustomize-controller"

// Labels and annotations Flux's kustomize-controller reads or writes on
// the objects of a Kustomization.
const (
	// NameLabel and NamespaceLabel mark every applied object with its
	// Kustomization; prune and delete remove only objects that carry
	// them.
	NameLabel      = "kustomize.toolkit.fluxcd.io/name"
	NamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
	// PruneKey set to "disabled" keeps an object when it leaves the
	// build or the Kustomization is deleted.
	PruneKey = "kustomize.toolkit.fluxcd.io/prune"
	// ReconcileKey set to "disabled" leaves an object unapplied (it
	// stays in the inventory).
	ReconcileKey = "kustomize.toolkit.fluxcd.io/reconcile"
	// SSAKey set to "IfNotPresent" applies an object only when it does
	// not exist; "Ignore" leaves it unapplied.
	SSAKey = "kustomize.toolkit.fluxcd.io/ssa"
	// ForceKey set to "enabled" recreates the object when an update
	// fails on an immutable field, as spec.force does for all.
	ForceKey = "kustomize.toolkit.fluxcd.io/force"
)

// Sources gives the directory tree a Kustomization's spec.sourceRef
// names, with its revision: the caller maps Flux sources (a Git
// checkout, an unpacked OCI artifact) to an fs.FS. A tree on disk is
// best given as a Dir (DirFS) or an os.DirFS, which Build reads through
// an os.Root (see the package documentation, "Files on disk").
type Sources interface {
	FS(ctx context.Context, k *release.Kustomization) (fsys fs.FS, revision string, err error)
}

// SourcesFunc adapts a function to Sources.
type SourcesFunc func(ctx context.Context, k *release.Kustomization) (fs.FS, string, error)

// FS calls f.
func (f SourcesFunc) FS(ctx context.Context, k *release.Kustomization) (fs.FS, string, error) {
	return f(ctx, k)
}

// Source is one source tree and its revision.
type Source struct {
	// FS is the tree.
	FS fs.FS
	// Revision is the source's revision, e.g. "main@sha1:…".
	Revision string
}

// MapSources are Sources by SourceKey: "Kind/namespace/name".
type MapSources map[string]Source

// SourceKey returns the key of a source reference in MapSources,
// "Kind/namespace/name" (the namespace as defaulted by release.Load).
func SourceKey(ref release.KustomizationSourceReference) string {
	return ref.Kind + "/" + ref.Namespace + "/" + ref.Name
}

// ErrSourceNotFound is matched by the error of a source MapSources does
// not have.
var ErrSourceNotFound = errors.New("source not found")

// FS returns the source of k.Spec.SourceRef.
func (m MapSources) FS(_ context.Context, k *release.Kustomization) (fs.FS, string, error) {
	ref := k.Spec.SourceRef
	if ref.Namespace == "" {
		ref.Namespace = k.Namespace
	}
	s, ok := m[SourceKey(ref)]
	if !ok {
		return nil, "", fmt.Errorf("%w: %s", ErrSourceNotFound, SourceKey(ref))
	}
	return s.FS, s.Revision, nil
}

// ReconcilerConfig configures a Reconciler.
type ReconcilerConfig struct {
	// Sources maps sourceRefs to trees; required.
	Sources Sources
	// FieldManager of server-side applies; default DefaultFieldManager.
	FieldManager string
	// Variables reads the ConfigMaps and Secrets of
	// spec.postBuild.substituteFrom, in the Kustomization's namespace.
	// When nil, Plan and Reconcile read them from the cluster they are
	// given (release.NewObjectValues), and Build refuses a Kustomization
	// that names any.
	Variables values.Reader
	// LenientSubstitution substitutes an unset variable without a
	// default with the empty text, as Flux does with its feature gate
	// StrictPostBuildSubstitutions off; by default it is an error.
	LenientSubstitution bool
	// Exclude, when set, leaves out of apply, inventory and prune the
	// objects for which it returns true: a fleet excludes the
	// HelmReleases, Kustomizations, sources and policies a Kustomization
	// builds (FleetUnit) and runs them as units of its own. A health
	// check naming an excluded object is left to the caller too.
	Exclude func(*unstructured.Unstructured) bool
	// NoCrossNamespaceRefs refuses a Kustomization whose spec.sourceRef
	// or spec.dependsOn names another namespace (Flux's
	// --no-cross-namespace-refs): Build, Plan and Reconcile return a
	// *release.AccessDeniedError before any source is read, and Reconcile
	// records it as Ready False and Stalled, reason AccessDenied. Off by
	// default, as in Flux; a platform running tenants turns it on.
	NoCrossNamespaceRefs bool
	// DefaultServiceAccount is the service account, of each
	// Kustomization's own namespace, that Plan, Reconcile and Delete act
	// as for a Kustomization whose spec.serviceAccountName is empty
	// (Flux's --default-service-account); empty: the cluster's own
	// credentials. A service account is acted as through the cluster's
	// release.Impersonator role; a cluster without it fails the
	// Kustomization. A platform running tenants sets it.
	DefaultServiceAccount string
	// Build are the build's limits and settings. Unset, LoadRestrictions
	// and Reorder are Flux's, not kustomize build's:
	// LoadRestrictionsNone (a kustomization may read any file of the
	// source) and ReorderOptionNone (objects in the order of the
	// kustomizations' entries; apply stages order them).
	Build Options
	// PollInterval between health checks; default 2s.
	PollInterval time.Duration
	// Now is the clock of conditions; default time.Now.
	Now func() time.Time
}

// Reconciler builds, plans, applies, prunes, waits for and deletes
// Flux Kustomizations on one cluster at a time. It is safe for
// concurrent use.
type Reconciler struct {
	cfg ReconcilerConfig
}

// NewReconciler checks cfg and returns a Reconciler.
func NewReconciler(cfg ReconcilerConfig) (*Reconciler, error) {
	if cfg.Sources == nil {
		return nil, errors.New("kustomize: ReconcilerConfig.Sources is required")
	}
	if cfg.FieldManager == "" {
		cfg.FieldManager = DefaultFieldManager
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 2 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Reconciler{cfg: cfg}, nil
}

// FleetUnit reports whether obj is of a kind a fleet runs as a unit of
// its own, or leaves to whoever serves its sources, rather than applying
// it as an object: a HelmRelease, a Flux Kustomization, a Karmada policy
// (the kinds Build decodes into Result.Objects), or any Flux source
// (source.toolkit.fluxcd.io GitRepository, Bucket, OCIRepository,
// HelmRepository, HelmChart, ExternalArtifact: a fleet maps sourceRefs
// itself, through Sources and its ChartGetter, and runs no
// source-controller). Use it as ReconcilerConfig.Exclude.
//
// The Flux controllers a `flux bootstrap` repository carries
// (flux-system/gotk-components.yaml: their Namespace, CRDs, Deployments,
// RBAC) are not excluded: they are plain objects and applied as such.
func FleetUnit(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return decodable(gvk.Group, gvk.Kind) || fluxSource(gvk.Group, gvk.Kind)
}

// fluxSource reports whether group and kind name a Flux source kind.
func fluxSource(group, kind string) bool {
	if group != source.Group {
		return false
	}
	switch kind {
	case "GitRepository", "Bucket", source.KindOCIRepository, source.KindHelmRepository, source.KindHelmChart, "ExternalArtifact":
		return true
	}
	return false
}

// SourceError is a source that could not be read for a Kustomization.
type SourceError struct {
	// Kustomization is namespace/name.
	Kustomization string
	// Source is Kind/namespace/name.
	Source string
	// Err is the Sources' error.
	Err error
}

// Error names the Kustomization, the source and the Sources' error; the
// source once when that error ends with it (as MapSources' does).
func (e *SourceError) Error() string {
	msg := strings.TrimSuffix(e.Err.Error(), ": "+e.Source)
	return fmt.Sprintf("Kustomization %s: source %s: %s", e.Kustomization, e.Source, msg)
}

func (e *SourceError) Unwrap() error { return e.Err }

// Build builds k as Flux's kustomize-controller does: the tree of its
// source at spec.path (a kustomization.yaml generated where there is
// none), with spec.targetNamespace, namePrefix, nameSuffix, patches,
// images and components set on the top kustomization file, through Build
// (nothing remote, nothing executed), then post-build substitution
// (LoadVariables, SubstituteKey) before the objects are decoded.
// Result.Manifests are the objects to apply; Result.Revision the
// source's revision. Errors: *release.AccessDeniedError (with
// ReconcilerConfig.NoCrossNamespaceRefs), *SourceError, *VariablesError, the
// *EntryError, *BuildError or *DecodeError of Build, *SubstituteError.
func (r *Reconciler) Build(ctx context.Context, k *release.Kustomization) (*Result, error) {
	res, _, err := r.build(ctx, k, r.cfg.Variables)
	return res, err
}

// build is Build with the reader of substituteFrom; it also returns the
// source's revision, known when the build fails too.
func (r *Reconciler) build(ctx context.Context, k *release.Kustomization, reader values.Reader) (*Result, string, error) {
	if r.cfg.NoCrossNamespaceRefs {
		if err := k.DenyCrossNamespaceRefs(); err != nil {
			return nil, "", err
		}
	}
	name := k.Namespace + "/" + k.Name
	fsys, rev, err := r.cfg.Sources.FS(ctx, k)
	if err != nil {
		ref := k.Spec.SourceRef
		if ref.Namespace == "" {
			ref.Namespace = k.Namespace
		}
		return nil, "", &SourceError{Kustomization: name, Source: SourceKey(ref), Err: err}
	}
	h := hooks{prepare: generate(k), withhold: func(err error, step, origin string) error { return withheld(k, err, step, origin) }}
	var marks *secretMarks
	if k.Spec.PostBuild != nil {
		vars, err := LoadVariables(ctx, reader, k)
		if err != nil {
			return nil, rev, err
		}
		marks = &secretMarks{objects: map[string]*leaves{}, values: map[string]bool{}}
		for _, v := range vars.Secret {
			marks.values[v] = true
		}
		h.post = substituteAll(k, vars, k.GetSubstituteStrategy() == release.SubstituteStrategyAlways, !r.cfg.LenientSubstitution, marks)
		h.marks = marks
	}
	dir := strings.TrimPrefix(path.Clean("/"+k.Spec.Path), "/")
	if dir == "" {
		dir = "."
	}
	opts := r.cfg.Build
	if opts.LoadRestrictions == kustypes.LoadRestrictionsUnknown {
		opts.LoadRestrictions = kustypes.LoadRestrictionsNone
	}
	if opts.Reorder == "" {
		opts.Reorder = krusty.ReorderOptionNone
	}
	opts.Manifests = true
	res, err := build(ctx, fsys, dir, opts, h)
	if res != nil {
		res.Revision = rev
		res.marks = marks
	}
	return res, rev, err
}
