#!/usr/bin/env bash
# Build the Kubernetes server binaries for one version from the Go module proxy.
# Usage: build-kubernetes.sh vX.Y.Z   -> $TOOLS_DIR/kubernetes-vX.Y.Z/{kubelet,kubeadm,...}
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/go-wrapper.sh"
version=${1:?usage: build-kubernetes.sh vX.Y.Z}
out=$TOOLS_DIR/kubernetes-$version
if cached "$out"; then log "kubernetes $version: reused from $out"; exit 0; fi

commands=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubeadm kubectl)
work=$CACHE_ROOT/work/kubernetes-$version
rm -rf "$work" "$out"; mkdir -p "$work" "$out"

kubernetes_wrapper_module "$version" "$work"

ldflags="-s -w $(kubernetes_version_ldflags "$version")"

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
