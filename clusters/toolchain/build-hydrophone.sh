#!/usr/bin/env bash
# hydrophone, the conformance-test runner certification users know, at the pinned version; only
# the in-cluster check (make vendor-check) uses it, so the main build does not wait for it.
# Output: $TOOLS_DIR/hydrophone-<version>/hydrophone (prints the binary's path).
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/go-wrapper.sh"
out=$TOOLS_DIR/hydrophone-$HYDROPHONE_VERSION
CGO_ENABLED=0 go_wrapper_build hydrophone sigs.k8s.io/hydrophone "$HYDROPHONE_VERSION" "$out" \
  sigs.k8s.io/hydrophone:hydrophone >&2
echo "$out/hydrophone"
