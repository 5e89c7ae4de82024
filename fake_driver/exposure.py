"""How a container sees the GPUs it was given: the contract shared by the DRA and device plugin.

Two exposures, chosen by the `exposure` setting, so that the suite can be tried against drivers
shaped differently:

`files` (default) -- for every device a container gets:
  * a read-only bind mount of the host file `<state_dir>/devices/<via>/<uuid>` at
    `/run/fake-gpu/<uuid>`, whose single line is
    `uuid=<uuid> index=<i> node=<node> model=<model> driver=<via>`;
  * an environment variable `FAKE_GPU_<index>=<uuid>`.
  `via` is "dra" or "device-plugin". Host files are kept apart per path, so a GPU handed out
  twice (once by each path) shows up with two different `driver=` values. The probe script
  (fake_driver/probe/fake-gpu-probe) reads this contract back inside the container.

`env-names` -- environment variables only, naming devices by their ResourceSlice name, as many
  real drivers do: `GPU_DEVICE_<index>=<name>` (e.g. GPU_DEVICE_0=gpu-0); nothing is mounted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterable, Literal

from fake_driver.inventory import Gpu

Via = Literal["dra", "device-plugin"]
VIA_DRA: Via = "dra"
VIA_DEVICE_PLUGIN: Via = "device-plugin"

# Host directory, shared with the node through a hostPath volume so the runtime can bind it.
DEFAULT_STATE_DIR = Path("/var/run/fake-gpu")
CONTAINER_DIR = PurePosixPath("/run/fake-gpu")
ENV_PREFIX = "FAKE_GPU_"
NAMES_ENV_PREFIX = "GPU_DEVICE_"
EXPOSURE_FILES = "files"
EXPOSURE_ENV_NAMES = "env-names"
EXPOSURES = (EXPOSURE_FILES, EXPOSURE_ENV_NAMES)


@dataclass(frozen=True)
class BindMount:
    host_path: str
    container_path: str


@dataclass(frozen=True)
class ContainerEdits:
    env: dict[str, str]
    mounts: list[BindMount]


def host_device_file(state_dir: Path, via: Via, gpu: Gpu) -> Path:
    return state_dir / "devices" / via / gpu.uuid


def device_file_line(gpu: Gpu, node_name: str, via: Via) -> str:
    return f"uuid={gpu.uuid} index={gpu.index} node={node_name} model={gpu.model} driver={via}\n"


def write_device_files(state_dir: Path, node_name: str, via: Via, gpus: Iterable[Gpu]) -> None:
    """Create (or repair) the host files; safe to call repeatedly and concurrently."""
    for gpu in gpus:
        path = host_device_file(state_dir, via, gpu)
        content = device_file_line(gpu, node_name, via)
        if path.exists() and path.read_text() == content:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        scratch.write_text(content)
        os.chmod(scratch, 0o444)
        os.replace(scratch, path)  # atomic: a container never binds a half-written file


def env_var_name(gpu: Gpu, exposure: str = EXPOSURE_FILES) -> str:
    return f"{NAMES_ENV_PREFIX if exposure == EXPOSURE_ENV_NAMES else ENV_PREFIX}{gpu.index}"


def env_value(gpu: Gpu, exposure: str = EXPOSURE_FILES) -> str:
    """What the environment variable of `gpu` holds: its name or its uuid."""
    return gpu.name if exposure == EXPOSURE_ENV_NAMES else gpu.uuid


def container_edits(state_dir: Path, via: Via, gpus: Iterable[Gpu], exposure: str = EXPOSURE_FILES) -> ContainerEdits:
    env: dict[str, str] = {}
    mounts: list[BindMount] = []
    for gpu in gpus:
        env[env_var_name(gpu, exposure)] = env_value(gpu, exposure)
        if exposure == EXPOSURE_FILES:
            mounts.append(
                BindMount(
                    host_path=str(host_device_file(state_dir, via, gpu)),
                    container_path=str(CONTAINER_DIR / gpu.uuid),
                )
            )
    return ContainerEdits(env=env, mounts=mounts)


def parse_exposure(value: object) -> str:
    if value not in EXPOSURES:
        raise ValueError(f"{value!r} is not one of {', '.join(EXPOSURES)}")
    return str(value)
