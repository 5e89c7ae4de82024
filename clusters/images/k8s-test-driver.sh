#!/usr/bin/env bash
# An image of Kubernetes' own DRA test driver: the workload image (a static busybox, so that a
# profile's nodeState command can list the driver's CDI files) plus the driver's binary.
# Usage: k8s-test-driver.sh [vX.Y.Z]. Prints the tag.
source "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
binary=$("$here/../toolchain/build-k8s-test-driver.sh" "$@")
base=$("$here/workload.sh")
hash=$(content_hash "$0" "$binary" "$base" "$(docker image inspect --format '{{.Id}}' "$base")")
tag=kep5004/k8s-test-driver:$hash
if image_current "$tag" "$hash"; then log "k8s test driver image $tag: reused"; echo "$tag"; exit 0; fi
ctx=$(mktemp -d "$CACHE_ROOT/work/k8s-test-driver.XXXX")
trap 'rm -rf "$ctx"' EXIT
cp "$binary" "$ctx/dra-test-driver"
printf 'FROM %s\nCOPY dra-test-driver /usr/local/bin/dra-test-driver\nENTRYPOINT ["/usr/local/bin/dra-test-driver"]\n' \
  "$base" >"$ctx/Dockerfile"
build_from_context "$tag" "$hash" "$ctx"
log "k8s test driver image $tag: built"
echo "$tag"
