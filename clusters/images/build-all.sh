#!/usr/bin/env bash
# Build (or reuse) every image: a node image per Kubernetes version, the workload image, the
# fake driver image and the suite's own image (in-cluster runs).
# Usage: build-all.sh [vX.Y.Z ...] (default: every pinned version).
# The tags are recorded for the Python side (clusters/images.py) in a list of this checkout's own,
# $IMAGES_DIR/tags-<hash of the checkout's path>.env, so that a build in another clone sharing the
# cache (a CI clone, the interrupt trials' copy) never changes what a run from this one deploys;
# and in $IMAGES_DIR/tags.env, the last build of any checkout, which an installed copy reads.
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
start=$SECONDS
tags=$IMAGES_DIR/tags-$(printf '%s' "$(cd "$HERE/../.." && pwd -P)" | sha256sum | cut -c1-12).env
touch "$tags" "$IMAGES_DIR/tags.env"
record() {  # KEY VALUE: replace KEY's line in both lists
  local f
  for f in "$tags" "$IMAGES_DIR/tags.env"; do
    { grep -v "^$1=" "$f" || true; echo "$1=$2"; } >"$f.$$" && mv "$f.$$" "$f"
  done
}
for v in ${*:-$KUBERNETES_VERSIONS}; do
  tag=$("$HERE/node.sh" "$v")  # an assignment, so that a failure stops the script
  record "NODE_IMAGE_${v//./_}" "$tag"
  # the same version's component images, for staging into another version's nodes (upgrades)
  archive=$("$HERE/components.sh" "$v"); record "COMPONENTS_${v//./_}" "$archive"
done
tag=$("$HERE/workload.sh"); record WORKLOAD_IMAGE "$tag"
tag=$("$HERE/driver.sh"); record DRIVER_IMAGE "$tag"
tag=$("$HERE/suite.sh"); record SUITE_IMAGE "$tag"
log "images ready in $((SECONDS - start)) s:"
sed 's/^/    /' "$tags" >&2
