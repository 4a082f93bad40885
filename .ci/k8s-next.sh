#!/usr/bin/env bash
# Builds, vets and unit-tests a copy of the module moved to the next
# Kubernetes minor (k8s.io v0.37, controller-runtime v0.25): the library
# supports v0.36 (go.mod's, Helm v3.21.4's) and v0.37 without either being
# pinned, and this keeps the second honest. The copy is temporary; go.mod
# here is not changed.
set -euo pipefail
cd "$(dirname "$0")/.."
K8S=${K8S_NEXT:-v0.37.2}
CR=${CONTROLLER_RUNTIME_NEXT:-v0.25.3}
# Helm v4's minor that pairs with k8s.io v0.37 (go.mod's v4.2.4 pairs
# with v0.36); release/helmv4 builds and is tested on it.
HELM4=${HELM4_NEXT:-v4.3.2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git ls-files -z | xargs -0 cp --parents -t "$tmp"
# Tests read ../shared (the charts); the copy sees the same.
[ -e ../shared ] && ln -s "$(cd ../shared && pwd)" "$(dirname "$tmp")/shared" 2>/dev/null || true
cd "$tmp"
GOFLAGS=-mod=mod go get \
  k8s.io/api@$K8S k8s.io/apimachinery@$K8S k8s.io/client-go@$K8S \
  k8s.io/apiextensions-apiserver@$K8S k8s.io/apiserver@$K8S k8s.io/cli-runtime@$K8S \
  k8s.io/component-base@$K8S k8s.io/kubectl@$K8S \
  sigs.k8s.io/controller-runtime@$CR helm.sh/helm/v4@$HELM4
grep -E '^\s+(k8s.io/client-go|sigs.k8s.io/controller-runtime|helm.sh/helm/v4) ' go.mod
go build ./...
go vet ./...
# The packages that meet client-go and controller-runtime directly.
# TestFallbackKubeVersionFollowsGoMod guards go.mod's own minor (test
# binaries carry no module information, so release/memory falls back to a
# constant that must follow go.mod); the copy's go.mod is not ours.
go test -count=1 -skip TestFallbackKubeVersionFollowsGoMod \
  ./release/kube/ ./release/controller/ ./release/memory/ ./examples/controller/ \
  ./release/helmv4/
