#!/usr/bin/env bash
# Build (or reuse) every image: a node image per Kubernetes version, the workload image, the
# fake driver image and the suite's own image (in-cluster runs).
# Usage: build-all.sh [vX.Y.Z ...] (default: every pinned version).
# The tags are recorded in $IMAGES_DIR/tags.env for the Python side.
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
start=$SECONDS
tags=$IMAGES_DIR/tags.env
touch "$tags"
record() {  # KEY VALUE: replace KEY's line in tags.env
  { grep -v "^$1=" "$tags" || true; echo "$1=$2"; } >"$tags.tmp" && mv "$tags.tmp" "$tags"
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
