#!/usr/bin/env bash
# Regenerates what is derived from the API types of release/ and source/
# (their kubebuilder markers, in release/types.go,
# release/types_kustomization.go and source/api.go):
#   - release/zz_generated.deepcopy.go and source/zz_generated.deepcopy.go
#     (release/deepcopy.go holds the copies written by hand);
#   - the CRDs in release/crds/, one file per kind.
# controller-gen runs at a pinned version through `go run`, so it is no
# dependency in go.mod. The CRDs are generated from a scratch copy of the
# type declarations (hack/apitypes.go): see there why.
# Run from anywhere: hack/generate.sh
set -euo pipefail
cd "$(dirname "$0")/.."

CONTROLLER_GEN_VERSION=v0.23.0
controller_gen() { go run "sigs.k8s.io/controller-tools/cmd/controller-gen@${CONTROLLER_GEN_VERSION}" "$@"; }

controller_gen object:headerFile=hack/boilerplate.go.txt paths=./source/ paths=./release/

scratch=$(mktemp -d "$PWD/.apitypes.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
go run hack/apitypes.go -out "$scratch/helm" -group helm.toolkit.fluxcd.io -version v2 \
	-rename Release=HelmRelease,ReleaseList=HelmReleaseList release/types.go release/status.go
go run hack/apitypes.go -out "$scratch/source" -group source.toolkit.fluxcd.io -version v1 source/api.go
go run hack/apitypes.go -out "$scratch/kustomize" -group kustomize.toolkit.fluxcd.io -version v1 \
	-omit Release,ReleaseList release/types_kustomization.go release/types.go release/status.go
rm -f release/crds/*.yaml
controller_gen crd:crdVersions=v1 paths="$scratch/helm" paths="$scratch/source" paths="$scratch/kustomize" output:crd:artifacts:config=release/crds
