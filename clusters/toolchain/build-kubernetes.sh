#!/usr/bin/env bash
# Build the Kubernetes server binaries for one version from the Go module proxy.
# Usage: build-kubernetes.sh vX.Y.Z   -> $TOOLS_DIR/kubernetes-vX.Y.Z/{kubelet,kubeadm,...}
#
# k8s.io/kubernetes pins its staging modules at v0.0.0 and resolves them with local
# replaces that do not apply to a dependency, so a throwaway wrapper module replaces
# each staging module with its published v0.Y.Z twin.
source "$(dirname "$0")/common.sh"
version=${1:?usage: build-kubernetes.sh vX.Y.Z}
[[ $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || die "not a Kubernetes release version: $version"
minor=${BASH_REMATCH[1]}
staging_version="v0.$minor.${BASH_REMATCH[2]}"
out=$TOOLS_DIR/kubernetes-$version
if cached "$out"; then log "kubernetes $version: reused from $out"; exit 0; fi

commands=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubeadm kubectl)
work=$CACHE_ROOT/work/kubernetes-$version
rm -rf "$work" "$out"; mkdir -p "$work" "$out"

go mod download -json "k8s.io/kubernetes@$version" >"$work/module.json" \
  || die "the Go module proxy does not serve k8s.io/kubernetes@$version"
upstream_mod=$(sed -n 's/.*"GoMod": "\(.*\)".*/\1/p' "$work/module.json")
{
  echo "module kep5004.local/kubernetes-build"
  echo "go $(awk '$1 == "go" {print $2; exit}' "$upstream_mod")"
  echo "godebug default=go1.$(awk '$1 == "godebug" {sub(/.*go1\./, ""); print; exit}' "$upstream_mod")"
  echo "require k8s.io/kubernetes $version"
  awk '$2 == "=>" && $3 ~ /^\.\/staging/ {print "replace " $1 " => " $1 " VERSION"}' "$upstream_mod" \
    | sed "s/VERSION/$staging_version/"
} >"$work/go.mod"

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
