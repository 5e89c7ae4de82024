"""Shared fixtures. Generates fake_driver._gen first when it is missing or stale, so the tests
run from a fresh clone without `make protos`."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterator

import pytest

from fake_driver.config import DriverConfig, load_config
from fake_driver.protos import generate

# conftest runs before test modules are imported, and those import fake_driver._gen.
if generate.is_stale():
    generate.generate()


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A temp dir with a short path: Unix socket paths must stay under 108 bytes."""
    path = Path(tempfile.mkdtemp(prefix="fg-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def make_config(short_tmp: Path) -> Callable[..., DriverConfig]:
    """load_config() with every host path inside short_tmp; keyword args are extra env vars."""

    def make(**env: str) -> DriverConfig:
        base = {
            "NODE_NAME": "node-a",
            "FAKE_GPU_STATE_DIR": str(short_tmp / "state"),
            "FAKE_GPU_CDI_DIR": str(short_tmp / "cdi"),
            "FAKE_GPU_PLUGIN_REGISTRY_DIR": str(short_tmp / "reg"),
            "FAKE_GPU_PLUGIN_DATA_DIR": str(short_tmp / "plugins"),
            "FAKE_GPU_DEVICE_PLUGIN_DIR": str(short_tmp / "dp"),
            "FAKE_GPU_READY_PORT": "0",  # any free port: tests run side by side
        }
        return load_config({**base, **env})

    return make
