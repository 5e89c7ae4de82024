"""Which list of built image tags a run reads: its own checkout's, so that a build in another
clone sharing the cache cannot change what it deploys (a soak once lost its driver that way)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from clusters import images
from clusters.paths import REPO_ROOT


def _build_all_name() -> str:
    """The name build-all.sh gives this checkout's list, computed as it does."""
    script = 'printf "%s" "$(cd "$1" && pwd -P)" | sha256sum | cut -c1-12'
    key = subprocess.run(["bash", "-c", script, "-", str(REPO_ROOT)], check=True, capture_output=True, text=True)
    return f"tags-{key.stdout.strip()}.env"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KEP5004_CACHE", str(tmp_path))
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "tags.env").write_text("DRIVER_IMAGE=driver:other-clone\n")
    return tmp_path / "images"


def test_the_checkout_reads_the_list_its_own_build_wrote(cache: Path) -> None:
    (cache / _build_all_name()).write_text("DRIVER_IMAGE=driver:mine\n")
    assert images.BuiltImages.load().driver == "driver:mine"


def test_a_checkout_that_never_built_reads_the_last_build(cache: Path) -> None:
    assert images.BuiltImages.load().driver == "driver:other-clone"


def test_no_build_at_all_names_the_file_to_make(cache: Path) -> None:
    (cache / "tags.env").unlink()
    with pytest.raises(images.ImagesMissingError, match="tags.env is missing"):
        images.BuiltImages.load()
