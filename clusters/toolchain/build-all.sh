#!/usr/bin/env bash
# Build (or reuse) every binary the clusters need, at the versions in clusters/versions.env.
# Usage: build-all.sh [vX.Y.Z ...]   (default: every pinned Kubernetes version)
# Output: $TOOLS_DIR/<component>-<version>/ with a .done stamp; a warm run builds nothing.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/go-wrapper.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
start=$SECONDS

# runc needs cgo and libseccomp headers; pause needs a static libc.
need_pkgs=()
dpkg -s libseccomp-dev >/dev/null 2>&1 || need_pkgs+=(libseccomp-dev)
dpkg -s libc6-dev >/dev/null 2>&1 || need_pkgs+=(libc6-dev)
command -v gcc >/dev/null || need_pkgs+=(gcc)
if ((${#need_pkgs[@]})); then
  run_logged apt-build-deps bash -c "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${need_pkgs[*]}"
fi

CGO_ENABLED=0 go_wrapper_build kind sigs.k8s.io/kind "$KIND_VERSION" "$TOOLS_DIR/kind-$KIND_VERSION" \
  sigs.k8s.io/kind:kind

ctrd_pkg=github.com/containerd/containerd/v2
CGO_ENABLED=0 GO_TAGS="no_btrfs no_zfs no_devmapper urfave_cli_no_docs" \
GO_LDFLAGS="-X $ctrd_pkg/version.Version=$CONTAINERD_VERSION -X $ctrd_pkg/version.Revision=kep5004-offline" \
  go_wrapper_build containerd $ctrd_pkg "$CONTAINERD_VERSION" "$TOOLS_DIR/containerd-$CONTAINERD_VERSION" \
  $ctrd_pkg/cmd/containerd:containerd $ctrd_pkg/cmd/ctr:ctr \
  $ctrd_pkg/cmd/containerd-shim-runc-v2:containerd-shim-runc-v2

CGO_ENABLED=1 GO_TAGS="seccomp urfave_cli_no_docs" \
GO_LDFLAGS="-X main.version=${RUNC_VERSION#v}" \
  go_wrapper_build runc github.com/opencontainers/runc "$RUNC_VERSION" "$TOOLS_DIR/runc-$RUNC_VERSION" \
  github.com/opencontainers/runc:runc

cni=github.com/containernetworking/plugins
CGO_ENABLED=0 GO_LDFLAGS="-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$CNI_PLUGINS_VERSION" \
  go_wrapper_build cni-plugins $cni "$CNI_PLUGINS_VERSION" "$TOOLS_DIR/cni-plugins-$CNI_PLUGINS_VERSION" \
  $cni/plugins/main/ptp:ptp $cni/plugins/main/loopback:loopback \
  $cni/plugins/ipam/host-local:host-local $cni/plugins/meta/portmap:portmap

CGO_ENABLED=0 GO_LDFLAGS="-X sigs.k8s.io/cri-tools/pkg/version.Version=$CRI_TOOLS_VERSION" \
  go_wrapper_build cri-tools sigs.k8s.io/cri-tools "$CRI_TOOLS_VERSION" "$TOOLS_DIR/cri-tools-$CRI_TOOLS_VERSION" \
  sigs.k8s.io/cri-tools/cmd/crictl:crictl

# Per version: Kubernetes, then etcd and pause at the exact tags its kubeadm asks for.
for v in ${*:-$KUBERNETES_VERSIONS}; do
  "$HERE/build-kubernetes.sh" "$v"
  "$HERE/build-etcd-and-pause.sh" "$v"
done

log "toolchain ready in $((SECONDS - start)) s (cache: $TOOLS_DIR)"
