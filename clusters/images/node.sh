#!/usr/bin/env bash
# The kind node image for one Kubernetes version: our base, the version's kubelet,
# kubeadm and kubectl, and its component images preloaded into containerd (what
# `kind build node-image` does, minus the registry fetches). Prints the tag.
source "$(dirname "$0")/lib.sh"
version=${1:?usage: node.sh vX.Y.Z}
HERE=$(cd "$(dirname "$0")" && pwd)
kbin=$TOOLS_DIR/kubernetes-$version
base=$("$HERE/node-base.sh")
components=$("$HERE/components.sh" "$version")
pause_tag=$("$kbin/kubeadm" config images list --kubernetes-version "$version" | sed -n 's#.*/pause:##p')

hash=$(content_hash "$0" "$base" "$components" "$kbin/kubeadm" "$kbin/kubelet" "$kbin/kubectl")
tag=kep5004/node:$version
if image_current "$tag" "$hash"; then log "node image $tag: reused"; echo "$tag"; exit 0; fi

log "node image $tag: assembling"
cid=$(docker run -d --privileged --entrypoint=sleep "$base" infinity)
trap 'docker rm -f "$cid" >/dev/null 2>&1' EXIT
docker cp "$kbin/kubeadm" "$cid:/usr/bin/kubeadm"
docker cp "$kbin/kubelet" "$cid:/usr/bin/kubelet"
docker cp "$kbin/kubectl" "$cid:/usr/bin/kubectl"
docker exec "$cid" sh -c "echo $version > /kind/version && sed -i 's#sandbox_image = .*#sandbox_image = \"registry.k8s.io/pause:$pause_tag\"#' /etc/containerd/config.toml"
docker exec -d "$cid" sh -c 'containerd >/var/log/containerd-build.log 2>&1'
for _ in $(seq 30); do docker exec "$cid" ctr version >/dev/null 2>&1 && break; sleep 1; done
docker exec -i "$cid" ctr -n k8s.io images import --label=io.cri-containerd.pinned=pinned \
  --all-platforms --no-unpack --digests - <"$components" >/dev/null || die "importing component images failed"
docker exec "$cid" sh -c 'pkill containerd; while pgrep containerd >/dev/null; do sleep 0.2; done; rm -f /var/log/containerd-build.log'
docker commit --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
  --change "LABEL $HASH_LABEL=$hash" --change 'ENV container=docker' "$cid" "$tag" >/dev/null
log "node image $tag: built"
echo "$tag"
