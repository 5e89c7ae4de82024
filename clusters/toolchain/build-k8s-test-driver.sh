#!/usr/bin/env bash
# Kubernetes' own DRA test driver (test/e2e/dra/test-driver of k8s.io/kubernetes, the kubelet
# plugin its e2e tests use) from the published module: a driver no one in this project wrote,
# for rehearsing a vendor's certification (make vendor-check).
# Usage: build-k8s-test-driver.sh [vX.Y.Z] (default: the default Kubernetes version).
# Output: $TOOLS_DIR/k8s-test-driver-vX.Y.Z/dra-test-driver (prints the binary's path).
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/go-wrapper.sh"
version=${1:-$KUBERNETES_DEFAULT}
out=$TOOLS_DIR/k8s-test-driver-$version
if ! cached "$out"; then
  work=$CACHE_ROOT/work/k8s-test-driver-$version
  rm -rf "$work" "$out"; mkdir -p "$work" "$out"
  kubernetes_wrapper_module "$version" "$work"
  build() {
    cd "$work"
    CGO_ENABLED=0 GOFLAGS="$GOFLAGS -mod=mod" go build -v -ldflags "-s -w" -o "$out/dra-test-driver" \
      k8s.io/kubernetes/test/e2e/dra/test-driver
  }
  run_logged "build-k8s-test-driver-$version" build
  touch "$out/.done"
fi
echo "$out/dra-test-driver"
