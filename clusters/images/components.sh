#!/usr/bin/env bash
# Control-plane component images for one Kubernetes version, tagged exactly as its kubeadm
# lists them, saved to one archive for preloading into the node image. CoreDNS is not
# built: clusters skip that kubeadm addon (nothing in the suite resolves names, and a
# resolver that forwards outside must not run here). Prints the archive path.
source "$(dirname "$0")/lib.sh"
version=${1:?usage: components.sh vX.Y.Z}
kbin=$TOOLS_DIR/kubernetes-$version
cached "$kbin" || die "Kubernetes $version is not built (run make toolchain)"
images=$("$kbin/kubeadm" config images list --kubernetes-version "$version")
etcd_tag=$(sed -n 's#.*/etcd:##p' <<<"$images")
pause_tag=$(sed -n 's#.*/pause:##p' <<<"$images")
etcd_dir=$TOOLS_DIR/etcd-v${etcd_tag%-*} pause_dir=$TOOLS_DIR/pause-$pause_tag
cached "$etcd_dir" && cached "$pause_dir" || die "etcd $etcd_tag / pause $pause_tag not built (run make toolchain)"
userland=$("$(dirname "$0")/userland.sh")

hash=$(content_hash "$0" "$kbin" "$etcd_dir" "$pause_dir" "$userland")
archive=$IMAGES_DIR/components-$version-$hash.tar
if [[ -f $archive ]]; then log "component images $version: reused"; echo "$archive"; exit 0; fi

ctx=$(mktemp -d "$CACHE_ROOT/work/components.XXXX")
trap 'rm -rf "$ctx"' EXIT
# static binaries on an almost empty root: /tmp and a passwd file are all they expect
static_image() {  # TAG ENTRY BINARY...
  local tag=$1 entry=$2; shift 2
  local d=$ctx/${tag//[\/:]/_}
  mkdir -p "$d/root/usr/local/bin" "$d/root/tmp" "$d/root/etc"
  chmod 1777 "$d/root/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/:/sbin/nologin\n' >"$d/root/etc/passwd"
  cp "$@" "$d/root/usr/local/bin/"
  printf 'FROM scratch\nCOPY root/ /\nENV PATH=/usr/local/bin\nENTRYPOINT ["%s"]\n' "$entry" >"$d/Dockerfile"
  build_from_context "$tag" "$hash" "$d"
}
tags=()
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  tags+=("registry.k8s.io/$c:$version"); static_image "registry.k8s.io/$c:$version" "/usr/local/bin/$c" "$kbin/$c"
done
tags+=("registry.k8s.io/etcd:$etcd_tag"); static_image "registry.k8s.io/etcd:$etcd_tag" /usr/local/bin/etcd "$etcd_dir/etcd"
tags+=("registry.k8s.io/pause:$pause_tag"); static_image "registry.k8s.io/pause:$pause_tag" /usr/local/bin/pause "$pause_dir/pause"

d=$ctx/kube-proxy; mkdir -p "$d"; cp "$kbin/kube-proxy" "$d/"
printf 'FROM %s\nCOPY kube-proxy /usr/local/bin/kube-proxy\n' "$userland" >"$d/Dockerfile"
tags+=("registry.k8s.io/kube-proxy:$version"); build_from_context "registry.k8s.io/kube-proxy:$version" "$hash" "$d"

docker save "${tags[@]}" -o "$archive.tmp" && mv "$archive.tmp" "$archive"
log "component images $version: ${tags[*]}"
echo "$archive"
