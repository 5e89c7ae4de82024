#!/usr/bin/env bash
# Build the Kubernetes server binaries for one version from the Go module proxy.
# Usage: build-kubernetes.sh vX.Y.Z   -> $TOOLS_DIR/kubernetes-vX.Y.Z/{kubelet,kubeadm,...}
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/go-wrapper.sh"
version=${1:?usage: build-kubernetes.sh vX.Y.Z}
[[ $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || die "not a Kubernetes release version: $version"
minor=${BASH_REMATCH[1]}
out=$TOOLS_DIR/kubernetes-$version
if cached "$out"; then log "kubernetes $version: reused from $out"; exit 0; fi

commands=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubeadm kubectl)
work=$CACHE_ROOT/work/kubernetes-$version
rm -rf "$work" "$out"; mkdir -p "$work" "$out"

kubernetes_wrapper_module "$version" "$work"

pkg=k8s.io/component-base/version
cli=k8s.io/client-go/pkg/version
ldflags="-s -w"
for p in $pkg $cli; do
  ldflags+=" -X $p.gitVersion=$version -X $p.gitMajor=1 -X $p.gitMinor=$minor"
  ldflags+=" -X $p.gitTreeState=clean -X $p.gitCommit=kep5004-offline-$version"
  ldflags+=" -X $p.buildDate=2026-01-01T00:00:00Z"
done

build() {
  cd "$work"
  # One invocation for all commands: shared packages compile once and links run in parallel.
  CGO_ENABLED=0 GOFLAGS="$GOFLAGS -mod=mod" go build -v -ldflags "$ldflags" -o "$out/" \
    "${commands[@]/#/k8s.io/kubernetes/cmd/}"
}
run_logged "build-kubernetes-$version" build
got=$("$out/kubeadm" version -o short)
[[ $got == "$version" ]] || die "kubeadm reports $got, expected $version (version stamping broke)"
touch "$out/.done"
log "kubernetes $version: built into $out"
