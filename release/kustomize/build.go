package kustomize

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	kustypes "sigs.k8s.io/kustomize/api/types"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helmfleet/helmfleet/internal/kyamlschema"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/source"
)

// Options are the settings of Build. The zero value is DefaultOptions; a
// zero field takes its default.
type Options struct {
	// LoadRestrictions says where a kustomization may read files
	// (patches, generator sources, resources that are files) from:
	// kustypes.LoadRestrictionsRootOnly (the default, as kustomize
	// build) only under its own directory; LoadRestrictionsNone anywhere
	// in the file system. Bases (directories) may be anywhere in the file
	// system either way; nothing outside it is ever read.
	LoadRestrictions kustypes.LoadRestrictions
	// Reorder is kustomize's output order: krusty.ReorderOptionUnspecified
	// (the default, as kustomize build: a kustomization's sortOptions,
	// else the legacy order, Namespaces and CRDs first, by kind),
	// krusty.ReorderOptionLegacy (the same, but kustomize logs a warning
	// when a kustomization has sortOptions) or krusty.ReorderOptionNone
	// (the order of the kustomizations' entries, depth first, unless
	// sortOptions say otherwise).
	Reorder krusty.ReorderOption
	// Origins fills in Result.Origins[i].File: the file each object came
	// from, by kustomize's origin annotations, which cost the build about
	// half as much allocation and time again (13.8 MB and 21 ms against
	// 9.0 MB and 14 ms for a repository of seven kustomizations). Errors
	// name the files of the objects at fault either way.
	Origins bool
	// Manifests fills in Result.Manifests, every object as unstructured
	// (what a Reconciler applies); it costs about a fifth more
	// allocation (11.0 MB against 9.0 MB for the same repository).
	// Reconciler.Build always sets it.
	Manifests bool
	// MaxFileBytes caps each file read (default 8 MiB).
	MaxFileBytes int64
	// MaxTotalBytes caps all files read together (default
	// release.MaxStreamBytes, 64 MiB).
	MaxTotalBytes int64
	// MaxFiles caps the number of files read (default 10,000).
	MaxFiles int
	// MaxKustomizations caps the kustomizations a build loads, each
	// inclusion counted (default 1,000): a base included by two
	// overlays is built twice, so a few files can otherwise ask for an
	// exponential amount of work.
	MaxKustomizations int
	// MaxDepth caps the nesting of kustomizations (default 64).
	MaxDepth int
}

// DefaultOptions returns the defaults described on Options.
func DefaultOptions() Options {
	return Options{
		LoadRestrictions:  kustypes.LoadRestrictionsRootOnly,
		Reorder:           krusty.ReorderOptionUnspecified,
		MaxFileBytes:      8 << 20,
		MaxTotalBytes:     release.MaxStreamBytes,
		MaxFiles:          10_000,
		MaxKustomizations: 1_000,
		MaxDepth:          64,
	}
}

// withDefaults fills in the zero fields of o.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.LoadRestrictions == kustypes.LoadRestrictionsUnknown {
		o.LoadRestrictions = d.LoadRestrictions
	}
	if o.Reorder == "" {
		o.Reorder = d.Reorder
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = d.MaxFileBytes
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = d.MaxTotalBytes
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = d.MaxFiles
	}
	if o.MaxKustomizations <= 0 {
		o.MaxKustomizations = d.MaxKustomizations
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = d.MaxDepth
	}
	return o
}

// Result is what a build produced.
type Result struct {
	// Objects are the HelmReleases, Flux Kustomizations, Flux sources
	// and Karmada policies of the output, decoded, defaulted and
	// validated by release.Load; each kind in output order.
	Objects *release.Objects
	// Plain are all other objects (CRDs, Namespaces, ConfigMaps, …) as
	// kustomize built them, in output order.
	Plain []*unstructured.Unstructured
	// Manifests are all objects of the output (Objects and Plain
	// together) as kustomize built them, undecoded and undefaulted, in
	// output order: what is applied to a cluster. Only with
	// Options.Manifests.
	Manifests []*unstructured.Unstructured
	// Origins names every object of the output, in output order (Objects
	// and Plain interleaved as kustomize built them), with, if
	// Options.Origins is set, the file it came from.
	Origins []Origin
	// Files are the files the build read, sorted: what a cache of the
	// result depends on.
	Files []string
	// Warnings are kustomize's deprecation notices, each prefixed with
	// its kustomization file, in the order the files were read.
	Warnings []string
	// Revision is the source's revision, set by Reconciler.Build.
	Revision string

	marks *secretMarks // what came from Secret variables, masked in plans
}

// Origin names one object of the output and the file it came from.
type Origin struct {
	// APIVersion, Kind, Namespace and Name of the object.
	APIVersion, Kind, Namespace, Name string
	// File is the file the object came from (for a generated object,
	// the kustomization file that generated it), a path in the file
	// system given to Build; empty unless Options.Origins is set, or
	// where kustomize does not know.
	File string
}

// Build runs kustomize (sigs.k8s.io/kustomize/api's krusty, as kustomize
// build does) over the kustomization in directory dir of fsys, and
// decodes its output: HelmReleases, Flux Kustomizations,
// HelmRepositories, OCIRepositories, HelmCharts and Karmada policies into
// Result.Objects, with release.Load's
// strictness, defaults and validation; everything else into
// Result.Plain.
//
// Before kustomize runs, Build reads the tree itself and refuses, as an
// *EntryError naming the kustomization file and the entry: remote bases
// and resources (ErrRemote: nothing is fetched), paths and symbolic links
// that leave fsys (ErrOutsideFS), files outside a kustomization's
// directory under LoadRestrictionsRootOnly (ErrOutsideRoot), missing files
// (fs.ErrNotExist), cycles (*CycleError), inputs over the Options' limits
// (*LimitError), and whatever would run a program or change process-wide
// state (ErrUnsupported: helmCharts, non-builtin plugins, KRM functions,
// openapi). kustomize then runs over a read-only view of exactly the
// files Build read, with plugins and Helm disabled, so it can
// reach nothing else. An error of kustomize's own is a *BuildError, or a
// *release.WithheldError when the tree holds Secret data (a
// secretGenerator's, or a file with a Secret object); an object that does not decode or
// validate is a *DecodeError naming its file (kustomize builds once more,
// tracking origins, to find it), the object and the field, returned
// beside the Result.
//
// Build checks ctx while it reads the tree; kustomize itself runs to the
// end once started. A panic inside kustomize is returned as a
// *BuildError.
func Build(ctx context.Context, fsys fs.FS, dir string, opts Options) (*Result, error) {
	return build(ctx, fsys, dir, opts, hooks{})
}

// hooks let a caller of build change the top kustomization before the
// walk (prepare, which may seed the walker's files) and the objects
// kustomize built before they are decoded (post, given the file of each
// object when origins are tracked).
type hooks struct {
	prepare func(w *walker, dir string) error
	post    func(m resmap.ResMap, files []string) error
	// marks are the objects post substituted Secret values into; an
	// error decoding one of them is replaced by withhold's.
	marks    *secretMarks
	withhold func(err error, step, origin string) error
}

func build(ctx context.Context, fsys fs.FS, dir string, opts Options, h hooks) (*Result, error) {
	opts = opts.withDefaults()
	dir = path.Clean(dir)
	if !fs.ValidPath(dir) {
		return nil, &EntryError{File: dir, Err: fmt.Errorf("%w: not a valid fs.FS path", ErrOutsideFS)}
	}
	root, fsys, done, err := rootOf(fsys)
	if err != nil {
		return nil, &EntryError{File: dir, Err: err}
	}
	defer done()
	w := newWalker(ctx, fsys, opts)
	w.root = root
	if h.prepare != nil {
		if err := h.prepare(w, dir); err != nil {
			return nil, err
		}
	}
	if _, err := w.kustomization(dir); err != nil {
		var ee *EntryError
		if !errors.As(err, &ee) {
			err = &EntryError{File: dir, Err: err}
		}
		return nil, err
	}
	m, files, err := run(w, dir, opts, opts.Origins)
	if err != nil {
		return nil, h.withheldBuild(w, dir, err)
	}
	if h.post != nil {
		if err := h.post(m, files); err != nil {
			if files == nil {
				// Name the objects' files: build again, tracking
				// origins, and say what post says of that build.
				if again, afiles, rerr := run(w, dir, opts, true); rerr == nil {
					if aerr := h.post(again, afiles); aerr != nil {
						return nil, aerr
					}
				}
			}
			return nil, err
		}
	}
	shown := files // Result.Origins name files only if asked to
	if !opts.Origins {
		shown = nil
	}
	res := &Result{Files: slices.Sorted(maps.Keys(w.files)), Warnings: w.warnings}
	decoded, err := split(m, shown, opts.Manifests, res)
	h.marks.annotate(res.Objects)
	if _, ok := errors.AsType[*outputError](err); ok {
		return nil, h.withheldBuild(w, dir, &BuildError{Dir: dir, Message: err.Error()})
	}
	if err == nil {
		return res, nil
	}
	if files == nil {
		// Name the objects' files: build again, tracking origins. Only
		// a failing build pays for it.
		if _, again, rerr := run(w, dir, opts, true); rerr == nil && len(again) == m.Size() {
			files = again
		}
	}
	return res, h.withheldDecode(decodeError(err, decoded, res.Origins, files))
}

// withheldDecode replaces a decode error about an object post put a
// Secret's value in (its field values and messages may quote it) by
// withhold's error, naming the objects.
func (h hooks) withheldDecode(err error) error {
	if h.marks == nil || len(h.marks.objects) == 0 || h.withhold == nil {
		return err
	}
	de, ok := errors.AsType[*DecodeError](err)
	if !ok {
		return h.withhold(err, "decode", "") // not one of Load's: it may quote anything
	}
	var origins []string
	for _, p := range de.Problems {
		if !h.marks.named(p.Kind, p.Namespace, p.Name) {
			continue
		}
		o := strings.TrimSpace(p.Kind + " " + strings.TrimPrefix(p.Namespace+"/"+p.Name, "/"))
		if p.Origin != "" {
			o = p.Origin + ", " + o
		}
		if !slices.Contains(origins, o) {
			origins = append(origins, o)
		}
	}
	if len(origins) == 0 {
		return err
	}
	return h.withhold(err, "decode", strings.Join(origins, "; "))
}

// run runs krusty over the files the walk read (a vetted file system). With origins, it asks kustomize for origin
// annotations and returns the file of each object, removing the
// annotations again unless the kustomization asked for them too.
func run(w *walker, dir string, opts Options, origins bool) (m resmap.ResMap, _ []string, err error) {
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, &BuildError{Dir: dir, Message: fmt.Sprintf("kustomize panicked: %v", p)}
		}
	}()
	files := w.files
	keepOrigins := false
	if origins {
		top, err := w.kustomizationFile(dir)
		if err != nil {
			return nil, nil, err
		}
		files = maps.Clone(w.files)
		if files[top], keepOrigins, err = withOriginAnnotations(files[top]); err != nil {
			return nil, nil, &EntryError{File: top, Err: err}
		}
	}
	kyamlschema.Init() // before builds on several goroutines touch kyaml's schema
	k := krusty.MakeKustomizer(&krusty.Options{
		Reorder:          opts.Reorder,
		LoadRestrictions: opts.LoadRestrictions,
		PluginConfig:     kustypes.DisabledPluginConfig(), // builtins only; Helm off
	})
	m, err = k.Run(newVetted(files), "/"+dir)
	if err != nil {
		return nil, nil, &BuildError{Dir: dir, Message: err.Error()}
	}
	if !origins {
		return m, nil, nil
	}
	origin := make([]string, m.Size())
	for i, r := range m.Resources() {
		origin[i] = originOf(r, dir)
	}
	if !keepOrigins {
		if err := m.RemoveOriginAnnotations(); err != nil {
			return nil, nil, &BuildError{Dir: dir, Message: err.Error()}
		}
	}
	return m, origin, nil
}

// withOriginAnnotations adds "originAnnotations" to the buildMetadata of
// a kustomization file, and says whether it was there already.
func withOriginAnnotations(data []byte) ([]byte, bool, error) {
	node, err := kyaml.Parse(string(data))
	if err != nil {
		return nil, false, err
	}
	list, err := node.Pipe(kyaml.LookupCreate(kyaml.SequenceNode, "buildMetadata"))
	if err != nil {
		return nil, false, err
	}
	for _, n := range list.YNode().Content {
		if n.Value == kustypes.OriginAnnotations {
			return data, true, nil
		}
	}
	if err := list.PipeE(kyaml.Append(kyaml.NewScalarRNode(kustypes.OriginAnnotations).YNode())); err != nil {
		return nil, false, err
	}
	s, err := node.String()
	return []byte(s), false, err
}

// originOf returns the file r came from, as a path in the file system.
func originOf(r *resource.Resource, dir string) string {
	o, err := r.GetOrigin()
	if err != nil || o == nil || o.Repo != "" {
		return ""
	}
	p := o.Path
	if o.ConfiguredIn != "" {
		p = o.ConfiguredIn
	}
	if p == "" {
		return ""
	}
	return path.Join(dir, p)
}

// withheldBuild replaces kustomize's own error (a *BuildError) by a
// *release.WithheldError when the tree holds Secret data kustomize may
// quote in it (it quotes the nodes it fails on): the data a
// secretGenerator reads, or a file that holds a Secret object.
func (h hooks) withheldBuild(w *walker, dir string, err error) error {
	if _, ok := errors.AsType[*BuildError](err); !ok || !secretData(w) {
		return err
	}
	if h.withhold != nil {
		return h.withhold(err, "kustomize build", dir)
	}
	return release.Withhold(err, "kustomization "+dir, "kustomize build", "")
}

// secretKind matches a document's top-level "kind: Secret".
var secretKind = regexp.MustCompile(`(?m)^kind:[ \t]*["']?Secret["']?[ \t]*(#.*)?\r?$`)

// secretData reports whether the walk read Secret data: a
// secretGenerator's, or a file with a Secret object.
func secretData(w *walker) bool {
	if len(w.secrets) > 0 {
		return true
	}
	for _, data := range w.files {
		if secretKind.Match(data) {
			return true
		}
	}
	return false
}

// split decodes the objects helmfleet knows and keeps the rest as they
// are. It returns the output index of each object it decoded and what
// release.Load said of them.
func split(m resmap.ResMap, files []string, manifests bool, res *Result) ([]int, error) {
	var stream bytes.Buffer
	var decoded []int
	res.Origins = make([]Origin, 0, m.Size())
	for i, r := range m.Resources() {
		o := Origin{APIVersion: r.GetApiVersion(), Kind: r.GetKind(), Namespace: r.GetNamespace(), Name: r.GetName()}
		if files != nil {
			o.File = files[i]
		}
		res.Origins = append(res.Origins, o)
		id := r.CurId()
		if manifests {
			j, err := r.MarshalJSON()
			if err != nil {
				return nil, &outputError{err}
			}
			manifest := &unstructured.Unstructured{}
			if err := manifest.UnmarshalJSON(j); err != nil { // int64 numbers, as client-go has them
				return nil, &outputError{err}
			}
			res.Manifests = append(res.Manifests, manifest)
		}
		if !decodable(id.Group, id.Kind) {
			obj, err := r.Map()
			if err != nil {
				return nil, &outputError{err}
			}
			res.Plain = append(res.Plain, &unstructured.Unstructured{Object: obj})
			continue
		}
		y, err := r.AsYAML()
		if err != nil {
			return nil, &outputError{err}
		}
		stream.WriteString("---\n")
		stream.Write(y)
		decoded = append(decoded, i)
	}
	objs, err := release.Load(&stream)
	res.Objects = objs
	if res.Objects == nil {
		res.Objects = &release.Objects{}
	}
	return decoded, err
}

// outputError is an object of kustomize's output that cannot be read
// back.
type outputError struct{ err error }

func (e *outputError) Error() string { return e.err.Error() }

// decodable reports whether release.Decode decodes objects of this group
// and kind; an unsupported version of such a kind is its error to report.
func decodable(group, kind string) bool {
	switch group {
	case release.Group:
		return kind == release.Kind
	case release.KustomizationGroup:
		return kind == release.KustomizationKind
	case source.Group:
		return kind == source.KindHelmRepository || kind == source.KindOCIRepository || kind == source.KindHelmChart
	case strings.Split(policy.GroupVersion, "/")[0]:
		return kind == policy.KindPropagationPolicy || kind == policy.KindClusterPropagationPolicy ||
			kind == policy.KindOverridePolicy || kind == policy.KindClusterOverridePolicy
	}
	return false
}

// decodeError points what release.Load reports at the objects' files.
func decodeError(err error, decoded []int, origins []Origin, files []string) error {
	fileOf := func(i int) string {
		if files == nil {
			return ""
		}
		return files[i]
	}
	var de *release.DecodeError
	if errors.As(err, &de) {
		out := &DecodeError{}
		for _, p := range de.Problems {
			var file string
			if i := p.Document - 1; i >= 0 && i < len(decoded) {
				file = fileOf(decoded[i])
			}
			out.Problems = append(out.Problems, Problem{Origin: file, Kind: p.Kind, Namespace: p.Namespace, Name: p.Name, FieldError: p.FieldError})
		}
		return out
	}
	out := &DecodeError{}
	for _, e := range flatten(err) {
		var kind, namespace, name string
		var fes []release.FieldError
		var ve *release.ValidationError
		var pe *policy.ValidationError
		switch {
		case errors.As(e, &ve):
			kind, namespace, name, fes = ve.Kind, ve.Namespace, ve.Name, ve.Errors
		case errors.As(e, &pe):
			kind, namespace, name = pe.Policy.Kind, pe.Policy.Namespace, pe.Policy.Name
			for _, p := range pe.Problems {
				fes = append(fes, release.FieldError{Path: p.Path, Value: valueString(p.Value), Message: p.Reason})
			}
		default:
			return err // not one of Load's; pass it on as it is
		}
		file := ""
		for _, i := range decoded {
			o := origins[i]
			if o.Kind == kind && o.Name == name && (o.Namespace == namespace || o.Namespace == "") {
				file = fileOf(i)
				break
			}
		}
		for _, fe := range fes {
			out.Problems = append(out.Problems, Problem{Origin: file, Kind: kind, Namespace: namespace, Name: name, FieldError: fe})
		}
	}
	return out
}

// valueString renders a bad value: a string as it is, anything else as
// JSON.
func valueString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// flatten lists the errors of a tree of joined errors.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}
