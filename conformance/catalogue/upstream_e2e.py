"""Which catalogue requirements each of Kubernetes' own DRA extended-resource e2e specs shows
(upstream_e2e.yaml beside this file), for `make upstream-e2e`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

MAPPING_PATH = Path(__file__).with_name("upstream_e2e.yaml")
# The label (and text) the specs carry: what e2e.test is focused on.
FEATURE_LABEL = "[FeatureGate:DRAExtendedResource]"


class MappingError(ValueError):
    pass


@dataclass(frozen=True)
class UpstreamSpec:
    key: str
    texts: tuple[str, ...]  # its It text, one per wording it had across the pinned versions
    ids: tuple[str, ...]
    device_plugin: bool
    asserts: str


@dataclass(frozen=True)
class OfflineTest:
    test: str
    why: str


@dataclass(frozen=True)
class UpstreamMapping:
    specs: tuple[UpstreamSpec, ...]
    offline: tuple[OfflineTest, ...]

    def device_plugin_specs(self) -> UpstreamMapping:
        """Only the specs that deploy a device plugin (those a mixed-node cluster adds to)."""
        return replace(self, specs=tuple(s for s in self.specs if s.device_plugin))

    def spec_for(self, text: str) -> UpstreamSpec | None:
        """The spec whose It text this is, whatever version worded it."""
        return next((s for s in self.specs if text in s.texts), None)


def _spec(raw: dict[str, Any]) -> UpstreamSpec:
    unknown = set(raw) - {"key", "texts", "ids", "device_plugin", "asserts"}
    if unknown or not raw.get("key") or not raw.get("texts") or not raw.get("ids"):
        raise MappingError(f"spec {raw.get('key')!r}: needs key, texts and ids (unknown fields: {sorted(unknown)})")
    return UpstreamSpec(
        key=str(raw["key"]),
        texts=tuple(str(t) for t in raw["texts"]),
        ids=tuple(str(i) for i in raw["ids"]),
        device_plugin=bool(raw.get("device_plugin", False)),
        asserts=" ".join(str(raw.get("asserts", "")).split()),
    )


def parse(raw: dict[str, Any]) -> UpstreamMapping:
    specs = tuple(_spec(s) for s in raw.get("specs") or [])
    texts = [t for s in specs for t in s.texts]
    keys = [s.key for s in specs]
    repeated = sorted({x for x in texts + keys if (texts + keys).count(x) > 1})
    if repeated:
        raise MappingError(f"repeated spec keys or texts: {repeated}")
    offline = tuple(OfflineTest(str(o["test"]), " ".join(str(o["why"]).split())) for o in raw.get("offline") or [])
    return UpstreamMapping(specs, offline)


@cache
def mapping(path: Path = MAPPING_PATH) -> UpstreamMapping:
    return parse(yaml.safe_load(path.read_text()))
