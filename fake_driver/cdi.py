"""CDI spec files: how the container runtime learns the edits for a named device."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from fake_driver.exposure import ContainerEdits

CDI_VERSION = "0.6.0"
DEFAULT_CDI_DIR = Path("/var/run/cdi")
BIND_MOUNT_OPTIONS = ("ro", "nosuid", "nodev", "bind")


@dataclass(frozen=True)
class CdiKind:
    """`<vendor>/<class>`; the vendor is derived from the driver name, e.g. k8s.gpu.example.com."""

    vendor: str
    device_class: str

    @classmethod
    def for_driver(cls, driver_name: str) -> CdiKind:
        return cls(vendor=f"k8s.{driver_name}", device_class="gpu")

    @property
    def kind(self) -> str:
        return f"{self.vendor}/{self.device_class}"

    def device_id(self, device_name: str) -> str:
        return f"{self.kind}={device_name}"

    def spec_path(self, cdi_dir: Path, suffix: str) -> Path:
        return cdi_dir / f"{self.vendor}_{self.device_class}-{suffix}.json"


@dataclass(frozen=True)
class CdiDevice:
    name: str
    edits: ContainerEdits


def spec_document(kind: CdiKind, devices: Sequence[CdiDevice]) -> dict[str, Any]:
    return {
        "cdiVersion": CDI_VERSION,
        "kind": kind.kind,
        "devices": [
            {
                "name": device.name,
                "containerEdits": {
                    "env": [f"{key}={value}" for key, value in sorted(device.edits.env.items())],
                    "mounts": [
                        {
                            "hostPath": mount.host_path,
                            "containerPath": mount.container_path,
                            "options": list(BIND_MOUNT_OPTIONS),
                        }
                        for mount in device.edits.mounts
                    ],
                },
            }
            for device in devices
        ],
    }


def write_spec(path: Path, document: dict[str, Any]) -> None:
    """Atomic write; the scratch name does not end in .json so the CDI cache never loads it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.tmp")
    scratch.write_text(json.dumps(document, indent=2) + "\n")
    os.replace(scratch, path)


def remove_spec(path: Path) -> None:
    path.unlink(missing_ok=True)
