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
