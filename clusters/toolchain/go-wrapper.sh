# go_wrapper_build NAME MODULE VERSION OUT PKG:BIN... (sourced helper)
# Builds main packages of MODULE@VERSION inside a throwaway module that requires it.
# A wrapper rather than `go install pkg@version`: that refuses modules whose go.mod has
# replace or exclude directives (containerd, etcd). Extra build settings come from the
# environment: CGO_ENABLED, GO_TAGS, GO_LDFLAGS.
go_wrapper_build() {
  local name=$1 module=$2 version=$3 out=$4; shift 4
  if cached "$out"; then log "$name $version: reused from $out"; return 0; fi
  local work=$CACHE_ROOT/work/$name-$version
  rm -rf "$work" "$out"; mkdir -p "$work" "$out"
  printf 'module kep5004.local/%s-build\n\ngo 1.26\n\nrequire %s %s\n' "$name" "$module" "$version" >"$work/go.mod"
  local targets=("$@")
  _build() {
    cd "$work"
    local t
    for t in "${targets[@]}"; do
      echo "== ${t%%:*}"
      GOFLAGS="$GOFLAGS -mod=mod" go build -tags "${GO_TAGS:-}" -ldflags "-s -w ${GO_LDFLAGS:-}" \
        -o "$out/${t##*:}" "${t%%:*}"
    done
  }
  run_logged "build-$name-$version" _build
  touch "$out/.done"
}

# kubernetes_wrapper_module vX.Y.Z DIR: writes DIR/go.mod, a throwaway module that requires
# k8s.io/kubernetes at that version. k8s.io/kubernetes pins its staging modules at v0.0.0 and
# resolves them with local replaces that do not apply to a dependency, so the wrapper replaces
# each staging module with its published v0.Y.Z twin.
kubernetes_wrapper_module() {
  local version=$1 dir=$2 upstream_mod
  [[ $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || die "not a Kubernetes release version: $version"
  local staging_version="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
  go mod download -json "k8s.io/kubernetes@$version" >"$dir/module.json" \
    || die "the Go module proxy does not serve k8s.io/kubernetes@$version"
  upstream_mod=$(sed -n 's/.*"GoMod": "\(.*\)".*/\1/p' "$dir/module.json")
  {
    echo "module kep5004.local/kubernetes-build"
    echo "go $(awk '$1 == "go" {print $2; exit}' "$upstream_mod")"
    echo "godebug default=go1.$(awk '$1 == "godebug" {sub(/.*go1\./, ""); print; exit}' "$upstream_mod")"
    echo "require k8s.io/kubernetes $version"
    awk '$2 == "=>" && $3 ~ /^\.\/staging/ {print "replace " $1 " => " $1 " VERSION"}' "$upstream_mod" \
      | sed "s/VERSION/$staging_version/"
  } >"$dir/go.mod"
}

# kubernetes_version_ldflags vX.Y.Z: the -X flags that stamp a build of k8s.io/kubernetes with its
# release version (a module build has no git tree for hack/lib/version.sh to read).
kubernetes_version_ldflags() {
  local version=$1 p flags=""
  [[ $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || die "not a Kubernetes release version: $version"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $p.gitVersion=$version -X $p.gitMajor=1 -X $p.gitMinor=${BASH_REMATCH[1]}"
    flags+=" -X $p.gitTreeState=clean -X $p.gitCommit=kep5004-offline-$version"
    flags+=" -X $p.buildDate=2026-01-01T00:00:00Z"
  done
  echo "$flags"
}
