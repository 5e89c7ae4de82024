#!/usr/bin/env bash
# The images Kubernetes' DRA extended-resource e2e specs of one version deploy (make upstream-e2e),
# built here instead of pulled: each on the workload image (a static busybox: the shell and tools
# the specs exec), tagged with upstream's image name and tag under registry prefixes of our own,
# which a KUBE_TEST_REPO_LIST file hands to e2e.test.
# Usage: upstream-e2e.sh vX.Y.Z
# Prints the repo-list file's path, then one image tag a line.
source "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
version=${1:?usage: upstream-e2e.sh vX.Y.Z}
E2E_PREFIX=kep5004.local/e2e-test-images
STORAGE_PREFIX=kep5004.local/sig-storage
dirs=$("$here/../toolchain/build-upstream-e2e.sh" "$version")
e2e_dir=$(sed -n 1p <<<"$dirs")
hostpath_dir=$(sed -n 2p <<<"$dirs")
base=$("$here/workload.sh")
base_id=$(docker image inspect --format '{{.Id}}' "$base")
src=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')

repo_list=$IMAGES_DIR/upstream-e2e-repo-list.yaml
printf 'promoterE2eRegistry: %s\nsigStorageRegistry: %s\n' "$E2E_PREFIX" "$STORAGE_PREFIX" >"$repo_list"

# The tags this version's specs ask for: busybox (the default test image) from e2e.test's image list
# with our prefixes in place (the list also names other busybox tags, from manifests it does not
# rewrite); the device plugin from the DaemonSet manifest it deploys (the image list may name an
# older tag); the hostpath plugin is pinned per version in clusters/versions.env
# (build-upstream-e2e.sh checks it against the manifests).
busybox_tag=$(KUBE_TEST_REPO_LIST=$repo_list "$e2e_dir/e2e.test" --list-images 2>/dev/null \
  | sed -n "s#^$E2E_PREFIX/busybox:##p")
plugin_tag=$(sed -n 's#.*image: .*/sample-device-plugin:##p' \
  "$src/test/e2e/testing-manifests/sample-device-plugin/sample-device-plugin.yaml")
hostpath_tag=${hostpath_dir##*/hostpathplugin-}
[[ $busybox_tag =~ ^[^[:space:]]+$ && -n $plugin_tag ]] \
  || die "could not read the busybox (got '$busybox_tag') or sample-device-plugin tag of $version"

# image TAG BINARY DOCKERFILE-TAIL: BINARY added to the base image at /, with the lines given.
image() {
  local tag=$1 binary=$2 tail=$3 hash ctx
  # The tag is part of the content: two tags of one repository built alike (busybox 1.37.0-1 and
  # 1.37.0-2) would otherwise be one image id, whose node archive (clusters/image_archives.py names
  # it by repository and id) holds only the tag saved first.
  hash=$(content_hash "$0" "$base_id" "$binary" "$tail" "$tag")
  if image_current "$tag" "$hash"; then log "$tag: reused"; return; fi
  ctx=$(mktemp -d "$CACHE_ROOT/work/upstream-e2e-image.XXXX")
  if [[ -n $binary ]]; then cp "$binary" "$ctx/"; fi
  printf 'FROM %s\n%s\n' "$base" "$tail" >"$ctx/Dockerfile"
  build_from_context "$tag" "$hash" "$ctx"
  rm -rf "$ctx"
  log "$tag: built"
}
busybox=$E2E_PREFIX/busybox:$busybox_tag
hostpath=$STORAGE_PREFIX/hostpathplugin:$hostpath_tag
plugin=$E2E_PREFIX/sample-device-plugin:$plugin_tag
image "$busybox" "" 'CMD ["sh"]'
image "$hostpath" "$hostpath_dir/hostpathplugin" 'COPY hostpathplugin /hostpathplugin
ENTRYPOINT ["/hostpathplugin"]'
image "$plugin" "$e2e_dir/sample-device-plugin" 'COPY sample-device-plugin /sampledeviceplugin
ENTRYPOINT ["/sampledeviceplugin", "-alsologtostderr"]'

echo "$repo_list"
printf '%s\n' "$busybox" "$hostpath" "$plugin"
