# Shared helpers for the toolchain and image build scripts (sourced, not run).
set -euo pipefail
HERE_COMMON=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../versions.env
source "$HERE_COMMON/../versions.env"
CACHE_ROOT=${KEP5004_CACHE:-$HOME/.cache/kep5004-conformance}
TOOLS_DIR=$CACHE_ROOT/tools
LOG_DIR=$CACHE_ROOT/logs
mkdir -p "$TOOLS_DIR" "$LOG_DIR"
export GOFLAGS="-buildvcs=false -trimpath" GOTOOLCHAIN=local

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# run_logged NAME CMD...: run a long step, keep its output in $LOG_DIR/NAME.log,
# print a heartbeat every 30 s and the log tail on failure.
run_logged() {
  local name=$1; shift
  local logf=$LOG_DIR/$name.log start=$SECONDS
  log "$name: started (log: $logf)"
  ( "$@" ) >"$logf" 2>&1 &
  local pid=$! beat=$SECONDS
  while kill -0 "$pid" 2>/dev/null; do
    sleep 2
    if (( SECONDS - beat >= 30 )) && kill -0 "$pid" 2>/dev/null; then
      beat=$SECONDS
      log "$name: still running ($((SECONDS - start)) s): $(tail -n 1 "$logf" | cut -c1-100)"
    fi
  done
  if ! wait "$pid"; then
    tail -n 30 "$logf" >&2
    die "$name failed after $((SECONDS - start)) s; full log: $logf"
  fi
  log "$name: done in $((SECONDS - start)) s"
}

# cached DIR: true when DIR holds a finished build (its .done stamp exists).
cached() { [[ -f $1/.done ]]; }
