"""Where the project keeps its build caches and cluster state (outside the clone)."""
from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CLUSTERS_DIR = REPO_ROOT / "clusters"


def cache_root() -> Path:
    return Path(os.environ.get("KEP5004_CACHE", Path.home() / ".cache" / "kep5004-conformance"))


def tools_dir() -> Path:
    return cache_root() / "tools"


def state_dir() -> Path:
    """Per-cluster kubeconfig, rendered config and exported logs."""
    return cache_root() / "clusters"
