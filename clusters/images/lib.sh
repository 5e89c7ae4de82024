# Helpers for the image builders (sourced). Images are cached by content: each carries a
# label with the hash of everything that went into it, and is rebuilt only when it changes.
source "$(dirname "${BASH_SOURCE[0]}")/../toolchain/common.sh"
IMAGES_DIR=$CACHE_ROOT/images
mkdir -p "$IMAGES_DIR"
HASH_LABEL=io.kep5004.content-hash

# content_hash ARGS...: hash of strings and of the contents of any files/dirs named.
content_hash() {
  local a size id
  for a in "$@"; do
    if [[ -d $a ]]; then (cd "$a" && find . -type f ! -name '*.pyc' -printf '%p\t%s\t%D-%i-%s-%T@\0' | LC_ALL=C sort -z | file_sums)
    elif [[ -f $a ]]; then read -r size id < <(stat -L -c '%s %d-%i-%s-%.10Y' "$a"); printf '%s  -\n' "$(digest "$a" "$size" "$id")"
    else printf '%s\n' "$a"; fi
  done | sha256sum | cut -c1-16
}

# A no-op build hashes every Kubernetes binary, etcd and the component archive (~1.5 GB a
# version): a large file's digest is remembered under its identity (device, inode, size, mtime),
# which the toolchain's write-once outputs never give to other content.
DIGESTS_DIR=$CACHE_ROOT/work/digests
LARGE_FILE=$((1024 * 1024))
mkdir -p "$DIGESTS_DIR"

# digest FILE SIZE IDENTITY: FILE's sha256, remembered when FILE is large.
digest() {
  (( $2 >= LARGE_FILE )) || { sha256sum <"$1" | cut -c1-64; return; }
  local memo=$DIGESTS_DIR/$3
  if [[ ! -f $memo ]]; then sha256sum <"$1" | cut -c1-64 >"$memo.$$" && mv "$memo.$$" "$memo"; fi
  echo "$(<"$memo")"
}

# file_sums: "PATH<tab>SIZE<tab>IDENTITY" records (NUL-ended) in, `sha256sum` lines out, in
# order; small files go to sha256sum in batches (one process per file would cost seconds).
file_sums() {
  local path size id batch=()
  while IFS=$'\t' read -r -d '' path size id; do
    if (( size < LARGE_FILE )); then
      batch+=("$path")
      (( ${#batch[@]} < 500 )) || { sha256sum "${batch[@]}"; batch=(); }
      continue
    fi
    (( ${#batch[@]} == 0 )) || sha256sum "${batch[@]}"
    batch=()
    printf '%s  %s\n' "$(digest "$path" "$size" "$id")" "$path"
  done
  (( ${#batch[@]} == 0 )) || sha256sum "${batch[@]}"
}

# image_current TAG HASH: true when TAG exists and was built from HASH.
image_current() {
  [[ $(docker image inspect --format "{{ index .Config.Labels \"$HASH_LABEL\" }}" "$1" 2>/dev/null) == "$2" ]]
}

# debian_mirror: the Debian mirror this host's apt already uses (never a hard-coded host).
debian_mirror() {
  local m
  m=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [[ -n $m ]] || m=$(awk '$1 == "deb" && $3 ~ /^bookworm$/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [[ -n $m ]] || die "no Debian mirror configured in /etc/apt (needed for debootstrap)"
  echo "$m"
}

# rootfs_tar NAME PACKAGES: a cached tarball of a Debian minbase rootfs with PACKAGES.
rootfs_tar() {
  local name=$1 pkgs=$2
  local tar=$IMAGES_DIR/rootfs-$name-$(content_hash "$DEBIAN_SUITE" "$pkgs").tar
  if [[ -f $tar ]]; then echo "$tar"; return 0; fi
  command -v debootstrap >/dev/null \
    || run_logged apt-debootstrap bash -c 'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap'
  local dir; dir=$(mktemp -d "$CACHE_ROOT/work/rootfs-$name.XXXX")
  run_logged "debootstrap-$name" debootstrap --variant=minbase --include="${pkgs// /,}" \
    "$DEBIAN_SUITE" "$dir" "$(debian_mirror)"
  # apt lists and caches only bloat the image
  rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/*.bin "$dir"/var/cache/apt/archives/*.deb
  tar -C "$dir" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
  rm -rf "$dir"
  echo "$tar"
}

# build_from_context TAG HASH DIR: docker build (legacy builder, works offline) with the hash label.
build_from_context() {
  docker build -q --label "$HASH_LABEL=$2" -t "$1" "$3" >/dev/null || die "docker build of $1 failed"
}

# pyproject_pins [--except] NAME...: the pinned requirements of pyproject.toml named (or all but those).
pyproject_pins() {
  local py=${KEP5004_PYTHON:-$CACHE_ROOT/venv/bin/python}
  [[ -x $py ]] || die "$py is missing (run make venv)"
  "$py" - "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/pyproject.toml" "$@" <<'PY'
import sys, tomllib
deps = tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]
exclude = sys.argv[2:3] == ["--except"]
names = set(sys.argv[3:] if exclude else sys.argv[2:])
pins = [d.split("#")[0].strip() for d in deps]
print(" ".join(p for p in pins if (p.split("==")[0].strip() in names) != exclude))
PY
}

# python_site NAME PINS: those wheels from PyPI installed into a cached directory (its path is printed).
python_site() {
  local py=${KEP5004_PYTHON:-$CACHE_ROOT/venv/bin/python}
  local site; site=$IMAGES_DIR/$1-site-$(content_hash "$2")
  if [[ ! -d $site ]]; then
    run_logged "$1-wheels" "$py" -m pip install --quiet --only-binary=:all: --target "$site.tmp" $2
    mv "$site.tmp" "$site"
  fi
  echo "$site"
}
