#!/usr/bin/env bash
# Make sure a usable Docker engine runs on this host, changing only what it must:
#  - no engine at all: install Debian's docker.io and start dockerd (ours, pid file kept);
#  - root lacks CAP_SYS_RESOURCE and Docker is older than 23 (it then asks runc for every
#    capability on --privileged): install runc-capfilter as the default runtime of the
#    dockerd we start. An engine someone else started is never restarted or reconfigured.
# On an ordinary host with a working Docker this prints what it found and changes nothing.
source "$(dirname "$0")/../toolchain/common.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
DOCKERD_PID=$CACHE_ROOT/dockerd.pid
CAPFILTER=$TOOLS_DIR/runc-capfilter
source "$HERE/disk.sh"
check_disk "$CACHE_ROOT" "$TOOLS_DIR"  # first: nothing is installed or built on a full disk

lacks_sys_resource() {  # bit 24 of the bounding set
  local bnd; bnd=$(awk '/^CapBnd/ {print $2}' /proc/self/status)
  (( (0x$bnd >> 24 & 1) == 0 ))
}

docker_major() { docker version --format '{{.Server.Version}}' 2>/dev/null | cut -d. -f1; }

install_engine() {
  log "no Docker engine found: installing Debian's docker.io"
  [[ $(id -u) == 0 ]] || die "installing docker.io needs root; install a Docker engine and rerun"
  command -v apt-get >/dev/null || die "no Docker engine and no apt-get to install one; install Docker and rerun"
  export DEBIAN_FRONTEND=noninteractive
  run_logged apt-docker bash -c 'apt-get update && apt-get install -y --no-install-recommends docker.io' \
    || die "could not install docker.io"
}

install_capfilter() {
  log "root's capability bounding set lacks CAP_SYS_RESOURCE: using runc-capfilter as Docker's runtime"
  (cd "$HERE/runc-capfilter" && CGO_ENABLED=0 go build -o "$CAPFILTER.new" . && mv "$CAPFILTER.new" "$CAPFILTER")
  mkdir -p /etc/docker
  python3 - "$CAPFILTER" <<'PY'
import json, os, sys
path = "/etc/docker/daemon.json"
cfg = json.load(open(path)) if os.path.exists(path) else {}
cfg.setdefault("runtimes", {})["runc-capfilter"] = {"path": sys.argv[1]}
cfg["default-runtime"] = "runc-capfilter"
json.dump(cfg, open(path, "w"), indent=2)
PY
}

start_dockerd() {
  log "starting dockerd (log: $LOG_DIR/dockerd.log)"
  nohup dockerd >>"$LOG_DIR/dockerd.log" 2>&1 &
  echo $! >"$DOCKERD_PID"
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && return 0; sleep 1; done
  tail -n 20 "$LOG_DIR/dockerd.log" >&2
  die "dockerd did not answer within 60 s"
}

if docker info >/dev/null 2>&1; then
  log "Docker engine $(docker version --format '{{.Server.Version}}') is running"
  if lacks_sys_resource && (( $(docker_major) < 23 )) \
     && [[ $(docker info --format '{{.DefaultRuntime}}') != runc-capfilter ]]; then
    die "this Docker ($(docker version --format '{{.Server.Version}}')) cannot start privileged containers without CAP_SYS_RESOURCE, and it was not started by this project, so it is left alone. Stop it and rerun, or add runc-capfilter (clusters/host/runc-capfilter) as its default runtime."
  fi
else
  command -v dockerd >/dev/null || install_engine
  [[ -x /usr/sbin/runc ]] || die "/usr/sbin/runc is missing (the docker.io package provides it)"
  dockerd_major=$(dockerd --version | sed -E 's/^Docker version ([0-9]+).*/\1/')
  if lacks_sys_resource && (( dockerd_major < 23 )); then install_capfilter; fi
  start_dockerd
fi

# Every kind node's containerd and kubelet hold inotify instances; with the kernel default
# (128 per user) the second or third cluster's containerd fails to start its CRI plugin.
raise_sysctl() {  # NAME MINIMUM
  local current; current=$(sysctl -n "$1")
  if (( current < $2 )); then
    log "raising $1 from $current to $2 (needed for several kind clusters at once)"
    sysctl -qw "$1=$2" || die "cannot raise $1 to $2; run: sysctl -w $1=$2"
  fi
}
raise_sysctl fs.inotify.max_user_instances 1024
raise_sysctl fs.inotify.max_user_watches 524288

if [[ $(stat -fc %T /sys/fs/cgroup) != cgroup2fs ]]; then
  log "host uses cgroup v1: kubelets will be configured with failCgroupV1: false and the cgroupfs driver"
fi
log "host ready"
