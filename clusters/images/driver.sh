#!/usr/bin/env bash
# The fake GPU driver image: the shared userland (python3), the driver's runtime wheels
# from PyPI at the versions pinned in pyproject.toml, and the fake_driver package with
# its generated protocol code. Prints the tag.
source "$(dirname "$0")/lib.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
py=${KEP5004_PYTHON:-$CACHE_ROOT/venv/bin/python}
userland=$("$(dirname "$0")/userland.sh")
pins=$(pyproject_pins grpcio protobuf pyyaml)
"$py" -m fake_driver.protos.generate >/dev/null || die "generating the driver's protocol code failed"
site=$(python_site driver "$pins")
ctx=$(mktemp -d "$CACHE_ROOT/work/driver.XXXX")
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/app"
# kube/names.py: the name rules the driver's configuration shares with the suite's profiles.
(cd "$repo" && tar --exclude=tests --exclude=__pycache__ -c fake_driver kube/__init__.py kube/names.py) | tar -C "$ctx/app" -x
# Hash what goes into the image, so that a change to the driver's tests rebuilds nothing; the
# site directory is named by the hash of its pins, so its name stands for its ~3000 files.
hash=$(content_hash "$0" "$userland" "${site##*/}" "$ctx/app")
tag=kep5004/fake-gpu-driver:$hash
if image_current "$tag" "$hash"; then log "driver image $tag: reused"; echo "$tag"; exit 0; fi
cp -r "$site" "$ctx/site-packages"
printf 'FROM %s\nCOPY site-packages /opt/site-packages\nCOPY app /opt/fake_driver\nENV PYTHONPATH=/opt/site-packages:/opt/fake_driver PYTHONUNBUFFERED=1\n' \
  "$userland" >"$ctx/Dockerfile"
build_from_context "$tag" "$hash" "$ctx"
# A module the driver imports but the image lacks fails the build, not a cluster.
docker run --rm --network none --entrypoint python3 "$tag" -c \
  'import fake_driver.dra_plugin.kube_api, fake_driver.dra_plugin.plugin, fake_driver.device_plugin.plugin' >&2 \
  || { docker rmi -f "$tag" >/dev/null; die "driver image $tag cannot import the driver"; }
log "driver image $tag: built"
echo "$tag"
