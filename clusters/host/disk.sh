# Free disk space, checked before anything is installed or built (sourced by prepare.sh).
# A cold build writes about 15 GB (Kubernetes per version, Go's module and build caches, Docker
# images); a warm run still needs room for the kind clusters' containers and logs.
COLD_BUILD_GB=15
RUN_GB=5

free_gb() {  # DIR: GB free on the filesystem that holds DIR (or its nearest existing parent)
  local dir=$1
  while [[ ! -d $dir ]]; do dir=$(dirname "$dir"); done
  df -P -BG "$dir" | awk 'NR == 2 { sub("G", "", $4); print $4 }'
}

need_disk() {  # DIR GB WHAT
  local free; free=$(free_gb "$1")
  (( free >= $2 )) || die "only $free GB free on the filesystem of $1: $3 needs about $2 GB (free some, or point KEP5004_CACHE elsewhere)"
}

check_disk() {  # CACHE_ROOT TOOLS_DIR
  if compgen -G "$2/kubernetes-*" >/dev/null; then
    need_disk "$1" "$RUN_GB" "running the kind clusters"
  else
    need_disk "$1" "$COLD_BUILD_GB" "a cold build (nothing is cached yet)"
  fi
  [[ ! -d /var/lib/docker ]] || need_disk /var/lib/docker "$RUN_GB" "Docker's images and the kind nodes"
}
