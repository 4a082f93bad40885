#!/usr/bin/env bash
# Build kube-apiserver and etcd for the integration suite from the Go module proxy and cache
# them in a directory keyed by the Kubernetes version; print that directory on stdout.
#
# k8s.io/kubernetes replaces its staging modules with local paths, so `go install …@v1.37.2`
# is refused. A throwaway tools module (outside this repository's module) requires
# k8s.io/kubernetes and replaces every staging module with its published k8s.io/<name>
# v0.<minor>.<patch>; etcd's version is the one Kubernetes pins.
#
# Env: K8S_VERSION (default 1.37.2); HELMFLEET_KUBE_BIN (default
# $HOME/.cache/helmfleet/kube-$K8S_VERSION); HELMFLEET_KUBE_TOOLS (tools module dir, default
# $HOME/.cache/helmfleet/tools-$K8S_VERSION). Only the first run builds (~5–6 min on 2 cores).
set -euo pipefail
K8S_VERSION=${K8S_VERSION:-1.37.2}
STAGING=v0.${K8S_VERSION#1.}
BIN=${HELMFLEET_KUBE_BIN:-$HOME/.cache/helmfleet/kube-$K8S_VERSION}
TOOLS=${HELMFLEET_KUBE_TOOLS:-$HOME/.cache/helmfleet/tools-$K8S_VERSION}
log() { echo "[$(date -u +%T)] kube-binaries: $*" >&2; }

have() {
  [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/etcd" ] &&
    [ "$("$BIN/kube-apiserver" --version 2>/dev/null)" = "Kubernetes v$K8S_VERSION" ]
}
if have; then echo "$BIN"; exit 0; fi

start=$(date +%s)
mkdir -p "$BIN" "$TOOLS"
cd "$TOOLS"
# The tools module must not see this repository's go.work or GOFLAGS=-mod=… settings.
export GOWORK=off GOFLAGS=-buildvcs=false
mod=$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/v$K8S_VERSION.mod
[ -f "$mod" ] || go mod download "k8s.io/kubernetes@v$K8S_VERSION"
{
  printf 'module helmfleet.local/kubetools\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$K8S_VERSION"
  sed -n "s#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 $STAGING#p" "$mod"
  echo ')'
} > go.mod
n=$(grep -c ' => ' go.mod)
[ "$n" -gt 20 ] || { log "only $n staging replacements found in $mod"; exit 1; }
printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "go.etcd.io/etcd/server/v3/etcdmain"\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver/app"\n)\n' > tools.go
go mod tidy
v=k8s.io/component-base/version
minor=${K8S_VERSION#1.}; minor=${minor%%.*}
log "building kube-apiserver v$K8S_VERSION ($n staging modules replaced)"
go build -trimpath -o "$BIN/kube-apiserver.tmp" -ldflags "-s -w -X $v.gitVersion=v$K8S_VERSION \
  -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean" k8s.io/kubernetes/cmd/kube-apiserver
log "building etcd"
go build -trimpath -ldflags "-s -w" -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3
mv "$BIN/etcd.tmp" "$BIN/etcd"
mv "$BIN/kube-apiserver.tmp" "$BIN/kube-apiserver"
log "built in $(( $(date +%s) - start ))s: $("$BIN/kube-apiserver" --version), $("$BIN/etcd" --version | head -1)"
echo "$BIN"
