"""The locally built image tags (written by clusters/images/build-all.sh)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clusters.paths import cache_root
from clusters.versions import KubeVersion


class ImagesMissingError(RuntimeError):
    pass


@dataclass(frozen=True)
class BuiltImages:
    tags: dict[str, str]

    @classmethod
    def load(cls) -> "BuiltImages":
        path = cache_root() / "images" / "tags.env"
        if not path.exists():
            raise ImagesMissingError(f"{path} is missing: build the images first (make images)")
        pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
        return cls({k: v for k, v in pairs})

    def _get(self, key: str) -> str:
        try:
            return self.tags[key]
        except KeyError:
            raise ImagesMissingError(f"no {key} in the built image list: rebuild the images (make images)") from None

    def node(self, version: KubeVersion) -> str:
        return self._get("NODE_IMAGE_" + version.tag.replace(".", "_"))

    def components(self, version: KubeVersion) -> Path:
        """The archive of the version's control-plane component images."""
        return Path(self._get("COMPONENTS_" + version.tag.replace(".", "_")))

    @property
    def workload(self) -> str:
        return self._get("WORKLOAD_IMAGE")

    @property
    def driver(self) -> str:
        return self._get("DRIVER_IMAGE")

    @property
    def suite(self) -> str:
        """The conformance suite itself, for in-cluster runs (conformance/incluster.py)."""
        return self._get("SUITE_IMAGE")
