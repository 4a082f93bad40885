package kustomize

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/postrender"
	"github.com/helmfleet/helmfleet/release"
)

// generate is the prepare hook that does what Flux's kustomize generator
// (fluxcd/pkg/kustomize, GenerateManifest) does to spec.path before the
// build: where the directory has no kustomization file, it generates one
// whose resources are the directory's YAML files and the subdirectories
// that hold a kustomization file; then it sets the Kustomization's
// targetNamespace, namePrefix and nameSuffix on that kustomization file
// (replacing its own), and appends its patches, images (an image of the
// same name is changed in place) and components (dropping missing ones
// when ignoreMissingComponents). The file is changed only in the walker's
// copy; the source is never written.
func generate(k *release.Kustomization) func(w *walker, dir string) error {
	return func(w *walker, dir string) error {
		s := &k.Spec
		file, err := w.kustomizationFile(dir)
		var data []byte
		switch {
		case errors.Is(err, ErrNoKustomization):
			file = path.Join(dir, konfig.DefaultKustomizationFileName())
			if data, err = scanManifests(w, dir); err != nil {
				return err
			}
		case err != nil:
			return &EntryError{File: dir, Err: err}
		default:
			if !transforms(s) {
				return nil
			}
			if data, err = w.read(file); err != nil {
				return &EntryError{File: file, Err: err}
			}
		}
		var kus kustypes.Kustomization
		if err := yaml.Unmarshal(data, &kus); err != nil {
			return &EntryError{File: file, Err: err}
		}
		if kus.APIVersion == "" && kus.Kind == "" {
			kus.APIVersion, kus.Kind = kustypes.KustomizationVersion, kustypes.KustomizationKind
		}
		if s.TargetNamespace != "" {
			kus.Namespace = s.TargetNamespace
		}
		if s.NamePrefix != "" {
			kus.NamePrefix = s.NamePrefix
		}
		if s.NameSuffix != "" {
			kus.NameSuffix = s.NameSuffix
		}
		for _, p := range s.Patches {
			kus.Patches = append(kus.Patches, kustypes.Patch{Patch: p.Patch, Target: selector(p.Target)})
		}
		for _, c := range s.Components {
			if s.IgnoreMissingComponents {
				if _, err := w.stat(path.Join(dir, c)); errors.Is(err, fs.ErrNotExist) {
					continue
				}
			}
			kus.Components = append(kus.Components, c)
		}
		for _, img := range s.Images {
			i := slices.IndexFunc(kus.Images, func(x kustypes.Image) bool { return x.Name == img.Name })
			if i < 0 {
				kus.Images = append(kus.Images, kustypes.Image{Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest})
				continue
			}
			if img.NewName != "" {
				kus.Images[i].NewName = img.NewName
			}
			if img.NewTag != "" || img.Digest != "" {
				kus.Images[i].NewTag, kus.Images[i].Digest = img.NewTag, img.Digest
			}
		}
		out, err := yaml.Marshal(kus)
		if err != nil {
			return &EntryError{File: file, Err: err}
		}
		w.seed(file, out)
		return nil
	}
}

// transforms reports whether the spec changes the kustomization file.
func transforms(s *release.KustomizationSpec) bool {
	return s.TargetNamespace != "" || s.NamePrefix != "" || s.NameSuffix != "" ||
		len(s.Patches) > 0 || len(s.Images) > 0 || len(s.Components) > 0
}

// selector converts a patch target to kustomize's selector, as the
// post-renderers convert theirs (the two types have the same fields).
func selector(t *release.Selector) *kustypes.Selector {
	return (*postrender.Selector)(t).Kustomize()
}

// scanManifests generates the kustomization of a directory that has
// none, as Flux does: its resources are every .yaml and .yml file below
// dir, and every subdirectory holding a kustomization file (not
// descended into), in lexical order; an empty directory gets a
// placeholder namespace, so that the build is empty rather than an
// error.
func scanManifests(w *walker, dir string) ([]byte, error) {
	var resources []string
	err := fs.WalkDir(w.fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := w.ctx.Err(); err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel := "./" + strings.TrimPrefix(p, dir+"/")
		if dir == "." {
			rel = "./" + p
		}
		if d.IsDir() {
			if _, err := w.kustomizationFile(p); err == nil {
				resources = append(resources, rel)
				return fs.SkipDir
			}
			return nil
		}
		if ext := path.Ext(p); ext == ".yaml" || ext == ".yml" {
			resources = append(resources, rel)
		}
		return nil
	})
	if err != nil {
		return nil, &EntryError{File: dir, Err: fmt.Errorf("generate a kustomization: %w", err)}
	}
	kus := kustypes.Kustomization{TypeMeta: kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind}}
	if len(resources) == 0 {
		kus.Namespace = "_placeholder"
	} else {
		kus.Resources = resources
	}
	return yaml.Marshal(kus)
}
