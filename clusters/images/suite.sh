#!/usr/bin/env bash
# The conformance suite as an image, for running it inside the cluster it certifies (the Job of
# `python -m conformance.runner.incluster manifest`, hydrophone, a sonobuoy plugin): the shared
# userland (python3, sh, cat), the suite's runtime wheels at the versions pinned in
# pyproject.toml, and the project laid out as a checkout. Prints the tag.
source "$(dirname "$0")/lib.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
userland=$("$(dirname "$0")/userland.sh")
# Everything but the fake driver's gRPC stack: the suite only renders the driver's manifests.
site=$(python_site suite "$(pyproject_pins --except grpcio protobuf grpcio-tools)")
ctx=$(mktemp -d "$CACHE_ROOT/work/suite.XXXX")
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/app"
(cd "$repo" && tar --exclude=tests --exclude=__pycache__ --exclude=_gen -c \
  pyproject.toml conftest.py clusters conformance fake_driver kube fixtures) | tar -C "$ctx/app" -x
# the site directory is named by the hash of its pins, so its name stands for its ~4000 files
hash=$(content_hash "$0" "$userland" "${site##*/}" "$ctx/app")
tag=kep5004/conformance-suite:$hash
if image_current "$tag" "$hash"; then log "suite image $tag: reused"; echo "$tag"; exit 0; fi
cp -r "$site" "$ctx/site-packages"
# Any user may run it (hydrophone runs it as 65534): all it writes goes below /tmp.
cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $userland
COPY site-packages /opt/site-packages
COPY app /opt/kep5004
RUN chmod -R a+rX /opt/site-packages /opt/kep5004
ENV PYTHONPATH=/opt/site-packages:/opt/kep5004 PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
    HOME=/tmp KEP5004_CACHE=/tmp/kep5004-cache RESULTS_DIR=/tmp/results
WORKDIR /opt/kep5004
ENTRYPOINT ["python3", "-m", "conformance.runner.incluster", "entrypoint"]
DOCKERFILE
build_from_context "$tag" "$hash" "$ctx"
# A module the entrypoints import but the image lacks fails the build, not a vendor's Job.
docker run --rm --network none --entrypoint python3 "$tag" -c 'import conformance.runner.incluster, conformance.runner.run' >&2 \
  || { docker rmi -f "$tag" >/dev/null; die "suite image $tag cannot import the suite"; }
log "suite image $tag: built"
echo "$tag"
