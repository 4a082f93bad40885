// Package crds holds the CustomResourceDefinitions
// (apiextensions.k8s.io/v1) of the kinds helmfleet reads and writes as
// typed objects: HelmRelease (helm.toolkit.fluxcd.io/v2, Go type
// release.Release), Kustomization (kustomize.toolkit.fluxcd.io/v1, Go
// type release.Kustomization) and HelmRepository, OCIRepository and
// HelmChart (source.toolkit.fluxcd.io/v1, package source). They are generated from
// the Go types by hack/generate.sh (controller-gen), with structural
// schemas, the status subresource and Flux's printer columns, and are
// committed here as YAML, one file per kind, named <group>_<plural>.yaml.
//
// The schemas follow the Go types, which follow Flux's: Flux's own
// manifests validate against them. They set no defaults: a Release reads
// back exactly as written, and release.Default fills Flux's defaults in
// one place. spec.values keeps any JSON (x-kubernetes-preserve-unknown-fields).
// Each CRD serves one version, the one the Go types model; documents of
// older versions (HelmRelease v2beta1 and v2beta2) are converted by
// release.Decode, not by the API server.
//
// Install them on a cluster with any client, e.g. for envtest or a hub:
//
//	for _, name := range crds.Names() {
//		data, _ := fs.ReadFile(crds.FS(), name)
//		// decode data into an apiextensionsv1.CustomResourceDefinition and create it
//	}
package crds

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed *.yaml
var manifests embed.FS

// FS returns the CRD manifests, one YAML file per kind.
func FS() fs.FS { return manifests }

// Names returns the file names of the manifests in FS, sorted.
func Names() []string {
	entries, err := manifests.ReadDir(".")
	if err != nil { // an embedded directory always reads
		panic(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}
