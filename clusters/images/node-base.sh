#!/usr/bin/env bash
# The kind node base image, built offline: a Debian bookworm rootfs (systemd 252, which
# still boots on cgroup v1 hosts), kind's static node files taken from the published
# sigs.k8s.io/kind module, and our own containerd, runc, crictl and CNI plugin builds.
# Prints the image tag.
source "$(dirname "$0")/lib.sh"
PKGS="systemd conntrack iptables nftables iproute2 ethtool util-linux mount kmod libseccomp2 pigz e2fsprogs bash ca-certificates jq procps"
kind_dir=$(go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[[ -d $kind_dir/images/base/files ]] || die "sigs.k8s.io/kind@$KIND_VERSION has no images/base/files"
bins=("$TOOLS_DIR/containerd-$CONTAINERD_VERSION" "$TOOLS_DIR/runc-$RUNC_VERSION"
      "$TOOLS_DIR/cri-tools-$CRI_TOOLS_VERSION" "$TOOLS_DIR/cni-plugins-$CNI_PLUGINS_VERSION")
for b in "${bins[@]}"; do cached "$b" || die "$b is not built (run make toolchain)"; done

hash=$(content_hash "$0" "$PKGS" "$kind_dir/images/base/files" "${bins[@]}")
tag=kep5004/kind-base:$hash
if image_current "$tag" "$hash"; then log "node base image $tag: reused"; echo "$tag"; exit 0; fi

rootfs_archive=$(rootfs_tar node "$PKGS")
root=$(mktemp -d "$CACHE_ROOT/work/node-base.XXXX")
trap 'rm -rf "$root" "$root.files" "$root.ctx"' EXIT
tar -C "$root" -xf "$rootfs_archive"

# kind's node files; module zips drop file modes, so set them as the kind image does.
stage=$root.files
cp -r "$kind_dir/images/base/files" "$stage"
chmod -R u+w "$stage"
find "$stage" -type d -exec chmod 0755 {} +
find "$stage" -type f -exec chmod 0644 {} +
chmod 0755 "$stage"/kind/bin/* "$stage"/usr/local/bin/*
cp -a "$stage/." "$root/" && rm -rf "$stage"

install -m 0755 "$TOOLS_DIR/containerd-$CONTAINERD_VERSION"/{containerd,ctr,containerd-shim-runc-v2} "$root/usr/local/bin/"
install -m 0755 "$TOOLS_DIR/cri-tools-$CRI_TOOLS_VERSION/crictl" "$root/usr/local/bin/"
install -m 0755 "$TOOLS_DIR/runc-$RUNC_VERSION/runc" "$root/usr/local/sbin/"
mkdir -p "$root/opt/cni/bin" "$root/etc/kubernetes/manifests"
install -m 0755 "$TOOLS_DIR/cni-plugins-$CNI_PLUGINS_VERSION"/{ptp,loopback,host-local,portmap} "$root/opt/cni/bin/"

# systemd trimmed for a container, as kind's base image is.
chroot "$root" /bin/bash -euc '
  find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete
  rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
        /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
        /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*
  echo ReadKMsg=no >> /etc/systemd/journald.conf
  ln -sf /usr/lib/systemd/systemd /sbin/init
  systemctl enable kubelet.service containerd.service undo-mount-hacks.service
  systemctl mask systemd-binfmt.service' >&2  # stdout carries only the tag

# The runtime spec every pod container starts from: containerd's default, plus kind's
# product-uuid hook, minus rlimits (a container cannot raise them on our hosts).
"$root/usr/local/bin/ctr" oci spec | python3 -c '
import json, sys
spec = json.load(sys.stdin)
spec.setdefault("hooks", {}).setdefault("createContainer", []).append({"path": "/kind/bin/mount-product-files.sh"})
spec["process"].pop("rlimits", None)
json.dump(spec, sys.stdout, indent=2)' >"$root/etc/containerd/cri-base.json"

log "importing node base image $tag"
tar -C "$root" -c . | docker import - "$tag-rootfs" >/dev/null
# docker import cannot set STOPSIGNAL (systemd shuts down cleanly on SIGRTMIN+3); a build can.
ctx=$root.ctx; mkdir -p "$ctx"
printf '%s\n' "FROM $tag-rootfs" 'ENV container=docker' 'STOPSIGNAL SIGRTMIN+3' \
  'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' >"$ctx/Dockerfile"
build_from_context "$tag" "$hash" "$ctx"
docker rmi "$tag-rootfs" >/dev/null
echo "$tag"
