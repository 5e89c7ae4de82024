#!/usr/bin/env bash
# Build (or reuse) every image: a node image per Kubernetes version, the workload image and
# the fake driver image. The tags are written to $IMAGES_DIR/tags.env for the Python side.
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
start=$SECONDS
out=$IMAGES_DIR/tags.env.tmp
: >"$out"
for v in $KUBERNETES_VERSIONS; do
  echo "NODE_IMAGE_${v//./_}=$("$HERE/node.sh" "$v")" >>"$out"
done
echo "WORKLOAD_IMAGE=$("$HERE/workload.sh")" >>"$out"
echo "DRIVER_IMAGE=$("$HERE/driver.sh")" >>"$out"
mv "$out" "$IMAGES_DIR/tags.env"
log "images ready in $((SECONDS - start)) s:"
sed 's/^/    /' "$IMAGES_DIR/tags.env" >&2
