#!/usr/bin/env bash
# The test workload image: Debian's static busybox plus the fake GPU probe, nothing else.
# Prints the tag.
source "$(dirname "$0")/lib.sh"
probe=$(cd "$(dirname "$0")/../.." && pwd)/fake_driver/probe/fake-gpu-probe
[[ -f $probe ]] || die "probe script $probe is missing"
hash=$(content_hash "$0" "$probe" "$DEBIAN_SUITE")
# A stable tag: the stored workload manifests name it, so it must not change with content.
tag=kep5004/gpu-workload:v1
if image_current "$tag" "$hash"; then log "workload image $tag: reused"; echo "$tag"; exit 0; fi
ctx=$(mktemp -d "$CACHE_ROOT/work/workload.XXXX")
trap 'rm -rf "$ctx"' EXIT
(cd "$ctx" && apt-get download busybox-static >/dev/null 2>&1) \
  || { apt-get update >/dev/null && (cd "$ctx" && apt-get download busybox-static >/dev/null); } \
  || die "cannot download Debian's busybox-static"
dpkg-deb -x "$ctx"/busybox-static_*.deb "$ctx/pkg"
mkdir -p "$ctx/root/bin" "$ctx/root/usr/local/bin" "$ctx/root/tmp"
cp "$ctx/pkg/bin/busybox" "$ctx/root/bin/"
for applet in $("$ctx/root/bin/busybox" --list); do
  [[ $applet == busybox ]] || ln -s busybox "$ctx/root/bin/$applet"
done
install -m 0755 "$probe" "$ctx/root/usr/local/bin/fake-gpu-probe"
printf 'FROM scratch\nCOPY root/ /\nENV PATH=/usr/local/bin:/bin\nCMD ["sh"]\n' >"$ctx/Dockerfile"
build_from_context "$tag" "$hash" "$ctx"
log "workload image $tag: built"
echo "$tag"
