#!/usr/bin/env bash
# Kubernetes' own e2e test binary and the two helpers its DRA extended-resource specs deploy, for
# one pinned version, from the Go module proxy (make upstream-e2e).
# Usage: build-upstream-e2e.sh vX.Y.Z
# Output: $TOOLS_DIR/upstream-e2e-vX.Y.Z/{e2e.test,sample-device-plugin} and
#         $TOOLS_DIR/hostpathplugin-<tag>/hostpathplugin (the tag clusters/versions.env pins
#         for that version); prints the two directories.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/go-wrapper.sh"
version=${1:?usage: build-upstream-e2e.sh vX.Y.Z}
# The proxy only: a module it lacks must fail the build, not be fetched from its origin.
export GOPROXY=${GOPROXY:-https://proxy.golang.org}
GOPROXY=${GOPROXY%,direct}
# These compiles take long and several GB; they yield to anything else on the host.
quiet() { nice -n 19 ionice -c3 "$@"; }

hostpath_tag=""
for pair in $UPSTREAM_E2E_HOSTPATHPLUGIN; do
  [[ ${pair%%=*} == "$version" ]] && hostpath_tag=${pair#*=}
done
[[ -n $hostpath_tag ]] || die "clusters/versions.env pins no hostpathplugin for $version (UPSTREAM_E2E_HOSTPATHPLUGIN)"

out=$TOOLS_DIR/upstream-e2e-$version
# One build of a version at a time: a second caller waits, then finds it cached.
exec {lock}>"$out.lock"
flock "$lock"
if ! cached "$out"; then
  work=$CACHE_ROOT/work/upstream-e2e-$version
  rm -rf "$work" "$out"; mkdir -p "$work" "$out"
  kubernetes_wrapper_module "$version" "$work"
  ldflags="-s -w $(kubernetes_version_ldflags "$version")"
  build() {
    cd "$work"
    export CGO_ENABLED=0 GOFLAGS="$GOFLAGS -mod=mod"
    quiet go test -c -vet=off -ldflags "$ldflags" -o "$out/e2e.test" k8s.io/kubernetes/test/e2e
    quiet go build -v -ldflags "-s -w" -o "$out/sample-device-plugin" \
      k8s.io/kubernetes/test/images/sample-device-plugin
  }
  run_logged "build-upstream-e2e-$version" build
  got=$("$out/e2e.test" --version)
  [[ $got == *"$version"* ]] || die "e2e.test reports '$got', expected $version (version stamping broke)"
  touch "$out/.done"
fi

# The tag the version's DRA test driver runs: the one its own proxy manifest names, or where it
# names none (1.36 on) the highest of the storage-csi manifests.
manifests=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')/test/e2e/testing-manifests
highest_in() { { grep -rhoE 'hostpathplugin:v[0-9.]+' "$1" || true; } | sort -uV | tail -n 1; }
wanted=$(highest_in "$manifests/dra")
[[ -n $wanted ]] || wanted=$(highest_in "$manifests/storage-csi")
[[ ${wanted#hostpathplugin:} == "$hostpath_tag" ]] \
  || die "clusters/versions.env pins hostpathplugin $hostpath_tag for $version, its manifests ask for ${wanted:-nothing}"

# csi-driver-host-path pins k8s.io/* with replace directives of its own, which a wrapper module
# would ignore: it is built as its own main module. From the Go module proxy (no vendor tree in a
# module zip: its go.mod and go.sum resolve it), or where the proxy does not serve it, from the
# pinned tag of a local clone named by KEP5004_HOSTPATHPLUGIN_GIT (the tags carry a vendor tree,
# so nothing else is fetched).
hp_out=$TOOLS_DIR/hostpathplugin-$hostpath_tag
if ! cached "$hp_out"; then
  hp_module=github.com/kubernetes-csi/csi-driver-host-path
  hp_work=$CACHE_ROOT/work/hostpathplugin-$hostpath_tag
  rm -rf "$hp_work" "$hp_out"; mkdir -p "$hp_work" "$hp_out"
  if hp_src=$(go mod download -json "$hp_module@$hostpath_tag" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p') \
      && [[ -d $hp_src ]]; then
    cp -r "$hp_src/." "$hp_work"; chmod -R u+w "$hp_work"
    hp_mod=mod
  elif [[ -n ${KEP5004_HOSTPATHPLUGIN_GIT:-} ]]; then
    log "hostpathplugin $hostpath_tag: the module proxy does not serve it; tag $hostpath_tag of $KEP5004_HOSTPATHPLUGIN_GIT"
    git -C "$KEP5004_HOSTPATHPLUGIN_GIT" archive "$hostpath_tag" | tar -x -C "$hp_work"
    hp_mod=vendor
  else
    die "the Go module proxy does not serve $hp_module@$hostpath_tag: set KEP5004_HOSTPATHPLUGIN_GIT to a clone of its repository"
  fi
  build_hostpath() {
    cd "$hp_work"
    CGO_ENABLED=0 GOFLAGS="$GOFLAGS -mod=$hp_mod" quiet go build -v -ldflags "-s -w -X main.version=$hostpath_tag" \
      -o "$hp_out/hostpathplugin" ./cmd/hostpathplugin
  }
  run_logged "build-hostpathplugin-$hostpath_tag" build_hostpath
  touch "$hp_out/.done"
fi
echo "$out"
echo "$hp_out"
