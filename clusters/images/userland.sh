#!/usr/bin/env bash
# A small Debian userland shared by kube-proxy (nft, iptables, conntrack) and the fake
# driver (python3). One imported layer, so the nodes store it once. Prints the tag.
source "$(dirname "$0")/lib.sh"
PKGS="python3 iptables nftables conntrack ca-certificates"
hash=$(content_hash "$0" "$PKGS" "$DEBIAN_SUITE")
tag=kep5004/userland:$hash
if image_current "$tag" "$hash"; then log "userland image $tag: reused"; echo "$tag"; exit 0; fi
archive=$(rootfs_tar userland "$PKGS")
docker import --change "LABEL $HASH_LABEL=$hash" "$archive" "$tag" >/dev/null
log "userland image $tag: built"
echo "$tag"
