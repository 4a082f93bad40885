package kustomize

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

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
	// Reorder is kustomize's output order: krusty.ReorderOptionLegacy
	// (the default, as kustomize build: Namespaces and CRDs first, by
	// kind) or krusty.ReorderOptionNone (the order of the
	// kustomizations' entries, depth first). A kustomization's own
	// sortOptions wins over either.
	Reorder krusty.ReorderOption
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
		Reorder:           krusty.ReorderOptionLegacy,
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
	// Objects are the HelmReleases, Flux sources and Karmada policies of
	// the output, decoded, defaulted and validated by release.Load; each
	// kind in output order.
	Objects *release.Objects
	// Plain are all other objects (CRDs, Namespaces, ConfigMaps, Flux
	// Kustomizations, …) as kustomize built them, in output order.
	Plain []*unstructured.Unstructured
	// Origins gives, for each object of the output in output order, the
	// file it came from (for a generated object, the kustomization file
	// that generated it), a path in the file system; empty where
	// kustomize does not know.
	Origins []Origin
	// Files are the files the build read, sorted: what a cache of the
	// result depends on.
	Files []string
	// Warnings are kustomize's deprecation notices, each prefixed with
	// its kustomization file, in the order the files were read.
	Warnings []string
}

// Origin names one object of the output and the file it came from.
type Origin struct {
	// APIVersion, Kind, Namespace and Name of the object.
	APIVersion, Kind, Namespace, Name string
	// File is a path in the file system given to Build.
	File string
}

// Build runs kustomize (sigs.k8s.io/kustomize/api's krusty, as kustomize
// build does) over the kustomization in directory dir of fsys, and
// decodes its output: HelmReleases, HelmRepositories, OCIRepositories,
// HelmCharts and Karmada policies into Result.Objects, with release.Load's
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
// openapi). kustomize then runs over an in-memory copy of exactly the
// files Build read, with plugins and Helm disabled, so it can reach
// nothing else. An error of kustomize's own is a *BuildError, with the
// data of Secret generators masked out; an object that does not decode or
// validate is a *DecodeError naming its file, the object and the field,
// returned beside the Result.
//
// Build checks ctx while it reads the tree; kustomize itself runs to the
// end once started.
func Build(ctx context.Context, fsys fs.FS, dir string, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	dir = path.Clean(dir)
	if !fs.ValidPath(dir) {
		return nil, &EntryError{File: dir, Err: fmt.Errorf("%w: not a valid fs.FS path", ErrOutsideFS)}
	}
	w := newWalker(ctx, fsys, opts)
	if _, err := w.kustomization(dir); err != nil {
		var ee *EntryError
		if !errors.As(err, &ee) {
			err = &EntryError{File: dir, Err: err}
		}
		return nil, err
	}
	m, origins, err := run(w, dir, opts)
	if err != nil {
		return nil, err
	}
	res := &Result{Files: slices.Sorted(maps.Keys(w.files)), Warnings: w.warnings}
	return res, split(m, origins, res)
}

// run copies the files the walk read into an in-memory file system and
// runs krusty there, with origin annotations asked for so that errors can
// name files; it removes them again unless the kustomization asked too.
func run(w *walker, dir string, opts Options) (resmap.ResMap, []string, error) {
	mem := filesys.MakeFsInMemory()
	top, err := w.kustomizationFile(dir)
	if err != nil {
		return nil, nil, err
	}
	keepOrigins := false
	for p, data := range w.files {
		if p == top {
			data, keepOrigins, err = withOriginAnnotations(data)
			if err != nil {
				return nil, nil, &EntryError{File: top, Err: err}
			}
		}
		if err := mem.WriteFile("/"+p, data); err != nil {
			return nil, nil, err
		}
	}
	k := krusty.MakeKustomizer(&krusty.Options{
		Reorder:          opts.Reorder,
		LoadRestrictions: opts.LoadRestrictions,
		PluginConfig:     kustypes.DisabledPluginConfig(), // builtins only; Helm off
	})
	m, err := k.Run(mem, "/"+dir)
	if err != nil {
		return nil, nil, &BuildError{Dir: dir, Message: mask(err.Error(), w.secrets)}
	}
	origins := make([]string, m.Size())
	for i, r := range m.Resources() {
		origins[i] = originOf(r, dir)
	}
	if !keepOrigins {
		if err := m.RemoveOriginAnnotations(); err != nil {
			return nil, nil, &BuildError{Dir: dir, Message: mask(err.Error(), w.secrets)}
		}
	}
	return m, origins, nil
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
	values, err := list.ElementValues("")
	if err == nil && slices.Contains(values, kustypes.OriginAnnotations) {
		return data, true, nil
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

// mask replaces every secret value in msg with "***". Values shorter than
// four bytes would mask half the message, so a message that contains one
// is withheld whole.
func mask(msg string, secrets []string) string {
	long := slices.DeleteFunc(slices.Clone(secrets), func(s string) bool { return len(s) < 4 })
	slices.SortFunc(long, func(a, b string) int { return len(b) - len(a) }) // longest first
	for _, s := range long {
		msg = strings.ReplaceAll(msg, s, "***")
		msg = strings.ReplaceAll(msg, base64.StdEncoding.EncodeToString([]byte(s)), "***")
	}
	for _, s := range secrets {
		if s != "" && len(s) < 4 && strings.Contains(msg, s) {
			return "kustomize failed; its message is withheld because it may contain the data of a secretGenerator"
		}
	}
	return msg
}

// split decodes the objects helmfleet knows and keeps the rest as they
// are.
func split(m resmap.ResMap, origins []string, res *Result) error {
	var stream bytes.Buffer
	var decoded []int // output index of each document of stream
	res.Origins = make([]Origin, 0, m.Size())
	for i, r := range m.Resources() {
		id := r.CurId()
		res.Origins = append(res.Origins, Origin{
			APIVersion: r.GetApiVersion(), Kind: r.GetKind(), Namespace: r.GetNamespace(), Name: r.GetName(), File: origins[i],
		})
		if !decodable(id.Group, id.Kind) {
			obj, err := r.Map()
			if err != nil {
				return err
			}
			res.Plain = append(res.Plain, &unstructured.Unstructured{Object: obj})
			continue
		}
		y, err := r.AsYAML()
		if err != nil {
			return err
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
	if err == nil {
		return nil
	}
	return decodeError(err, decoded, res.Origins)
}

// decodable reports whether release.Decode decodes objects of this group
// and kind; an unsupported version of such a kind is its error to report.
func decodable(group, kind string) bool {
	switch group {
	case release.Group:
		return kind == release.Kind
	case source.Group:
		return kind == source.KindHelmRepository || kind == source.KindOCIRepository || kind == source.KindHelmChart
	case strings.Split(policy.GroupVersion, "/")[0]:
		return kind == policy.KindPropagationPolicy || kind == policy.KindClusterPropagationPolicy ||
			kind == policy.KindOverridePolicy || kind == policy.KindClusterOverridePolicy
	}
	return false
}

// decodeError points what release.Load reports at the objects' files.
func decodeError(err error, decoded []int, origins []Origin) error {
	var de *release.DecodeError
	if errors.As(err, &de) {
		out := &DecodeError{}
		for _, p := range de.Problems {
			var file string
			if i := p.Document - 1; i >= 0 && i < len(decoded) {
				file = origins[decoded[i]].File
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
				file = o.File
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
