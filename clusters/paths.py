"""Where the project's files are, and where it keeps its build caches and cluster state (outside the clone).

REPO_ROOT is the directory that holds the project's packages side by side: the checkout (also
under an editable install), or site-packages when the project is installed (`pip install`).
Everything the code reads at run time ships with the packages so that REPO_ROOT-relative
paths are the same in both: package data (catalogue, deploy manifests, probe, versions.env,
the cluster scripts, the suite) and `fixtures/`, installed as a data-only directory next to
the packages (see [tool.setuptools] in pyproject.toml).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CLUSTERS_DIR = REPO_ROOT / "clusters"
# Only a checkout has the project files around the packages (pyproject.toml holds the pytest
# settings, conftest.py loads the cluster fixtures); an installed copy has neither.
IN_CHECKOUT = (REPO_ROOT / "pyproject.toml").is_file() and (REPO_ROOT / "conftest.py").is_file()
# Default report directory: the checkout's reports/, or reports/ under the current directory
# when installed (never inside site-packages).
REPORTS_DIR = REPO_ROOT / "reports" if IN_CHECKOUT else Path("reports")


def cache_root() -> Path:
    return Path(os.environ.get("KEP5004_CACHE", Path.home() / ".cache" / "kep5004-conformance"))


def tools_dir() -> Path:
    return cache_root() / "tools"


def state_dir() -> Path:
    """Per-cluster kubeconfig, rendered config and exported logs."""
    return cache_root() / "clusters"
