package postrender

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/kyamlschema"
)

// inputFile is the name the rendered manifests get in the in-memory
// kustomization; kustomize errors may mention it.
const inputFile = "helm-output.yaml"

// Run applies k's patches, in order, then its image changes to the rendered
// manifests, with kustomize (krusty over an in-memory filesystem, builtin
// transformers only, nothing read from disk), as Flux's helm-controller
// does. It implements Helm's postrender.PostRenderer.
//
// The objects keep the order they were rendered in (Helm's install order):
// kustomize's legacy reordering is off, as it is in Flux. Each object keeps
// the "# Source:" line Helm wrote above it, unless a patch renamed it. A
// patch may delete an object ($patch: delete) but not add one.
//
// A failure returns an *Error whose Path names the failing patch or image.
// Run never panics on bad patches or manifests: a panic inside kustomize is
// returned as an error. An empty k returns renderedManifests unchanged.
func (k Kustomize) Run(renderedManifests *bytes.Buffer) (*bytes.Buffer, error) {
	if len(k.Patches) == 0 && len(k.Images) == 0 {
		return renderedManifests, nil
	}
	in := renderedManifests.Bytes()
	m, err := k.build(in, len(k.Patches), len(k.Images))
	if err != nil {
		e := k.diagnose(in, err)
		e.Err = maskSecrets(in, e.Err)
		return nil, e
	}
	out, err := write(m, indexSources(in))
	if err != nil {
		return nil, &Error{Path: "kustomize", Err: err}
	}
	return out, nil
}

// build runs kustomize over in with the first np patches and the first ni
// images of k.
func (k Kustomize) build(in []byte, np, ni int) (resmap.ResMap, error) {
	return runKrusty(in, k.kustomization(np, ni), &krusty.Options{
		Reorder:          krusty.ReorderOptionNone,
		LoadRestrictions: kustypes.LoadRestrictionsRootOnly,
		PluginConfig:     kustypes.DisabledPluginConfig(),
	})
}

// kustomization returns the kustomization of the first np patches and the
// first ni images of k over inputFile.
func (k Kustomize) kustomization(np, ni int) kustypes.Kustomization {
	kz := kustypes.Kustomization{
		TypeMeta: kustypes.TypeMeta{
			APIVersion: kustypes.KustomizationVersion,
			Kind:       kustypes.KustomizationKind,
		},
		Resources: []string{inputFile},
	}
	for _, p := range k.Patches[:np] {
		kz.Patches = append(kz.Patches, kustypes.Patch{Patch: p.Patch, Target: p.Target.Kustomize()})
	}
	for _, img := range k.Images[:ni] {
		kz.Images = append(kz.Images, kustypes.Image{
			Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest,
		})
	}
	return kz
}

// runKrusty runs kz over in (as inputFile) in an in-memory filesystem.
func runKrusty(in []byte, kz kustypes.Kustomization, opts *krusty.Options) (m resmap.ResMap, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("kustomize panicked: %v", r)
		}
	}()
	// JSON is YAML: kustomize reads the kustomization as written.
	data, err := json.Marshal(kz)
	if err != nil {
		return nil, err
	}
	kyamlschema.Init() // before renders on several goroutines touch kyaml's schema
	fs := filesys.MakeFsInMemory()
	if err := fs.WriteFile(inputFile, in); err != nil {
		return nil, err
	}
	if err := fs.WriteFile(konfigFile, data); err != nil {
		return nil, err
	}
	return krusty.MakeKustomizer(opts).Run(fs, ".")
}

// konfigFile is the kustomization's file name.
const konfigFile = "kustomization.yaml"

// diagnose finds which patch or image made a whole run fail. Kustomize's
// errors do not say, so it runs growing prefixes of k (the manifests alone,
// then patches[0], patches[0..1], ..., then the images) and blames the first
// entry whose prefix fails. Kustomize applies patches before images, so a
// prefix applies exactly what the full run applied up to that entry. This
// costs up to len(Patches)+len(Images)+1 runs, on the error path only.
func (k Kustomize) diagnose(in []byte, whole error) *Error {
	if _, err := k.build(in, 0, 0); err != nil {
		return &Error{Path: "kustomize", Err: fmt.Errorf("reading the rendered manifests: %w", err)}
	}
	for i, p := range k.Patches {
		if _, err := k.build(in, i+1, 0); err != nil {
			return patchError(i, p, err)
		}
	}
	for i, img := range k.Images {
		if _, err := k.build(in, len(k.Patches), i+1); err != nil {
			return &Error{Path: fmt.Sprintf("kustomize.images[%d]", i), Value: img.Name, Err: err}
		}
	}
	return &Error{Path: "kustomize", Err: whole}
}

func patchError(i int, p Patch, err error) *Error {
	return &Error{Path: fmt.Sprintf("kustomize.patches[%d]", i), Target: p.Target, Value: p.Patch, Err: explainPatch(p, err)}
}

// explainPatch replaces kustomize's "unable to parse SM or JSON patch",
// which says nothing about why, with the YAML error when there is one.
func explainPatch(p Patch, err error) error {
	var doc any
	if yerr := yaml.Unmarshal([]byte(p.Patch), &doc); yerr != nil {
		return fmt.Errorf("patch is not valid YAML: %w", yerr)
	}
	return err
}

// Validate checks what can be checked of k without manifests, with
// kustomize's own parsers: every patch parses as a strategic merge or JSON
// 6902 patch, a JSON 6902 patch has a target, target regular expressions
// compile and selectors parse, and every image has a name. It returns the
// first problem as an *Error. Problems that depend on the manifests (a
// patch whose object is missing, a JSON 6902 path that does not exist) are
// found by Run.
func (k Kustomize) Validate() error {
	helpers := resmap.NewPluginHelpers(nil, nil, resmap.NewFactory(provider.NewDefaultDepProvider().GetResourceFactory()), nil)
	for i, p := range k.Patches {
		if err := validatePatch(helpers, p); err != nil {
			return patchError(i, p, err)
		}
	}
	for i, img := range k.Images {
		if strings.TrimSpace(img.Name) == "" {
			return &Error{Path: fmt.Sprintf("kustomize.images[%d].name", i), Err: errors.New("is required")}
		}
	}
	return nil
}

func validatePatch(h *resmap.PluginHelpers, p Patch) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kustomize panicked: %v", r)
		}
	}()
	if p.Target != nil {
		if err := p.Target.validate(); err != nil {
			return err
		}
	}
	cfg, err := yaml.Marshal(kustypes.Patch{Patch: p.Patch, Target: p.Target.Kustomize()})
	if err != nil {
		return err
	}
	if err := builtins.NewPatchTransformerPlugin().Config(h, cfg); err != nil {
		return err
	}
	// Kustomize accepted it; a YAML list is a JSON 6902 patch, which only
	// fails for want of a target once there are manifests.
	var doc any
	if yaml.Unmarshal([]byte(p.Patch), &doc) == nil {
		if _, list := doc.([]any); list && p.Target == nil {
			return errors.New("a JSON 6902 patch needs a target")
		}
	}
	return nil
}

// validate compiles s as kustomize will.
func (s *Selector) validate() error {
	if _, err := kustypes.NewSelectorRegex(s.Kustomize()); err != nil {
		return err
	}
	if _, err := labels.Parse(s.LabelSelector); err != nil {
		return fmt.Errorf("labelSelector: %w", err)
	}
	if _, err := labels.Parse(s.AnnotationSelector); err != nil {
		return fmt.Errorf("annotationSelector: %w", err)
	}
	return nil
}

// Kustomize converts s to kustomize's selector; nil stays nil.
// release/kustomize converts its patch targets (release.Selector, the same
// fields) with it too.
func (s *Selector) Kustomize() *kustypes.Selector {
	if s == nil {
		return nil
	}
	return &kustypes.Selector{
		ResId: resid.ResId{
			Gvk:       resid.Gvk{Group: s.Group, Version: s.Version, Kind: s.Kind},
			Name:      s.Name,
			Namespace: s.Namespace,
		},
		AnnotationSelector: s.AnnotationSelector,
		LabelSelector:      s.LabelSelector,
	}
}
