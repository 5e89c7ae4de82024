#!/usr/bin/env bash
# kwok, which plays the kubelets of fake nodes, at the pinned version; only the scale benchmark
# (make scale-bench) uses it, so the main build does not wait for it.
# Prints two lines: the kwok binary, and the module's own "fast" stage set (nodes become Ready,
# pods Running, deleted pods go), which the bare binary needs and reads through kustomize.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/go-wrapper.sh"
out=$TOOLS_DIR/kwok-$KWOK_VERSION
CGO_ENABLED=0 go_wrapper_build kwok sigs.k8s.io/kwok "$KWOK_VERSION" "$out" sigs.k8s.io/kwok/cmd/kwok:kwok >&2
module_dir=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[[ -d $module_dir/kustomize/stage/fast ]] || die "sigs.k8s.io/kwok@$KWOK_VERSION has no kustomize/stage/fast"
echo "$out/kwok"
echo "$module_dir/kustomize/stage/fast"
