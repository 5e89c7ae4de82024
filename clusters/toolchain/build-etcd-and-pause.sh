#!/usr/bin/env bash
# Build etcd and pause at the tags the built kubeadm of a Kubernetes version lists.
# Usage: build-etcd-and-pause.sh vX.Y.Z
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/go-wrapper.sh"
v=${1:?usage: build-etcd-and-pause.sh vX.Y.Z}
kubeadm=$TOOLS_DIR/kubernetes-$v/kubeadm
[[ -x $kubeadm ]] || die "kubeadm $v is not built yet (run build-kubernetes.sh $v)"
images=$("$kubeadm" config images list --kubernetes-version "$v" 2>/dev/null)
etcd_tag=$(sed -n 's#.*/etcd:##p' <<<"$images")
pause_tag=$(sed -n 's#.*/pause:##p' <<<"$images")
[[ -n $etcd_tag && -n $pause_tag ]] || die "kubeadm $v listed no etcd/pause image: $images"

CGO_ENABLED=0 go_wrapper_build etcd go.etcd.io/etcd/server/v3 "v${etcd_tag%-*}" \
  "$TOOLS_DIR/etcd-v${etcd_tag%-*}" go.etcd.io/etcd/server/v3:etcd

out=$TOOLS_DIR/pause-$pause_tag
if cached "$out"; then log "pause $pause_tag: reused from $out"; exit 0; fi
src=$(go mod download -json "k8s.io/kubernetes@$v" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')/build/pause/linux/pause.c
[[ -f $src ]] || die "pause.c not found in the k8s.io/kubernetes $v module"
mkdir -p "$out"
gcc -Os -Wall -Werror -static -DVERSION="v$pause_tag" -o "$out/pause" "$src"
touch "$out/.done"
log "pause $pause_tag: built"
