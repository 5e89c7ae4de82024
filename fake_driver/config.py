"""Driver configuration: a YAML file (path in FAKE_GPU_CONFIG) overlaid by environment variables.

Every problem is collected and reported together, naming the setting and where it came from,
so a bad DaemonSet fails at start with a message that says exactly what to fix.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from fake_driver.cdi import DEFAULT_CDI_DIR, CdiKind
from fake_driver.defects import parse_defects
from fake_driver.exposure import DEFAULT_STATE_DIR, EXPOSURE_FILES, parse_exposure
from fake_driver.grpc_unix import MAX_SOCKET_PATH_BYTES
from fake_driver.inventory import PROFILES, DeviceProfile, NodeInventory, build_inventory
from kube.names import extended_resource_name_problem, is_dns_subdomain, per_node

ENV_CONFIG_FILE = "FAKE_GPU_CONFIG"
ENV_NODE_NAME = "NODE_NAME"
MAX_DEVICES_PER_NODE = 128  # one ResourceSlice holds at most 128 devices
DEFAULT_READY_PORT = 8081  # the manifests' readinessProbe asks here
MAX_DRIVER_NAME_LENGTH = 63  # ResourceSlice.spec.driver limit; also keeps socket paths < 108 bytes


class ConfigError(ValueError):
    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid configuration:\n" + "\n".join(f"  - {p}" for p in problems))


@dataclass(frozen=True)
class DriverConfig:
    node_name: str
    profile: DeviceProfile
    driver_name: str
    device_count: int  # for this node, after per-node overrides
    resource_name: str  # extended resource served by the device plugin
    state_dir: Path
    cdi_dir: Path
    plugin_registry_dir: Path
    plugin_data_dir: Path
    device_plugin_dir: Path
    delete_slices_on_exit: bool
    device_plugin_cdi: bool  # device plugin hands out CDI devices instead of env + mounts
    ready_port: int  # readiness endpoint (GET /readyz) for the pod's readinessProbe; 0 in tests: any free port
    # Set (from the downward API) for seamless rolling updates: the old and the new pod of a
    # node both serve for a while, so each needs sockets of its own; the kubelet uses the newest.
    pod_uid: str = ""
    defects: frozenset[str] = frozenset()  # fake_driver.defects: off unless a self-check asks
    exposure: str = EXPOSURE_FILES  # fake_driver.exposure: how containers learn their devices

    @property
    def driver_plugin_dir(self) -> Path:
        return self.plugin_data_dir / self.driver_name

    @property
    def dra_socket(self) -> Path:
        return self.driver_plugin_dir / (f"dra-{self.pod_uid}.sock" if self.pod_uid else "dra.sock")

    @property
    def registration_socket(self) -> Path:
        name = f"{self.driver_name}-{self.pod_uid}-reg.sock" if self.pod_uid else f"{self.driver_name}-reg.sock"
        if len(str(self.plugin_registry_dir / name).encode()) > MAX_SOCKET_PATH_BYTES:
            # Long driver names: the kubelet learns the name from GetInfo, not from the file name.
            name = hashlib.sha256(name.encode()).hexdigest()[:32] + "-reg.sock"
        return self.plugin_registry_dir / name

    @property
    def checkpoint_path(self) -> Path:
        return self.driver_plugin_dir / "checkpoint.json"

    @property
    def kubelet_socket(self) -> Path:
        return self.device_plugin_dir / "kubelet.sock"

    @property
    def device_plugin_socket(self) -> Path:
        return self.device_plugin_dir / f"fake-gpu-{self.resource_name.replace('/', '_')}.sock"

    @property
    def cdi_kind(self) -> CdiKind:
        return CdiKind.for_driver(self.driver_name)

    def inventory(self) -> NodeInventory:
        return build_inventory(self.profile, self.node_name, self.device_count)


@dataclass(frozen=True)
class _Setting:
    key: str  # YAML key
    env: str | None  # overriding environment variable, if any
    parse: Callable[[Any], Any]  # raises ValueError with a reason
    default: Any = None  # None: derived from the profile


def _parse_str(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty string")
    return value.strip()


def _parse_int(value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError("must be an integer")
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an integer") from None
    if not low <= number <= high:
        raise ValueError(f"{number} is out of range {low}..{high}")
    return number


def _parse_count(value: Any) -> int:
    return _parse_int(value, 0, MAX_DEVICES_PER_NODE)


def _parse_port(value: Any) -> int:
    return _parse_int(value, 0, 65535)


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("false", "0", "no"):
        return False
    raise ValueError(f"{value!r} is not a boolean (true/false)")


def _parse_abs_path(value: Any) -> Path:
    path = Path(_parse_str(value))
    if not path.is_absolute():
        raise ValueError(f"{value!r} is not an absolute path")
    return path


def _parse_node_devices(value: Any) -> dict[str, int]:
    if not isinstance(value, Mapping):
        raise ValueError("must be a mapping of node name (or shell-style pattern, e.g. '*-worker2') to device count")
    counts, problems = {}, []
    for node, count in value.items():
        try:
            counts[str(node)] = _parse_count(count)
        except ValueError as exc:
            problems.append(f"node {node!r}: {exc}")
    if problems:
        raise ValueError("; ".join(problems))
    return counts


_SETTINGS = (
    _Setting("profile", "FAKE_GPU_PROFILE", _parse_str, "generic"),
    _Setting("driverName", "FAKE_GPU_DRIVER_NAME", _parse_str),
    _Setting("devicesPerNode", "FAKE_GPU_DEVICES_PER_NODE", _parse_count, 8),
    _Setting("nodeDevices", None, _parse_node_devices, {}),
    _Setting("resourceName", "FAKE_GPU_RESOURCE_NAME", _parse_str),
    _Setting("stateDir", "FAKE_GPU_STATE_DIR", _parse_abs_path, DEFAULT_STATE_DIR),
    _Setting("cdiDir", "FAKE_GPU_CDI_DIR", _parse_abs_path, DEFAULT_CDI_DIR),
    _Setting(
        "pluginRegistryDir", "FAKE_GPU_PLUGIN_REGISTRY_DIR", _parse_abs_path, Path("/var/lib/kubelet/plugins_registry")
    ),
    _Setting("pluginDataDir", "FAKE_GPU_PLUGIN_DATA_DIR", _parse_abs_path, Path("/var/lib/kubelet/plugins")),
    _Setting("devicePluginDir", "FAKE_GPU_DEVICE_PLUGIN_DIR", _parse_abs_path, Path("/var/lib/kubelet/device-plugins")),
    _Setting("deleteSlicesOnExit", "FAKE_GPU_DELETE_SLICES_ON_EXIT", _parse_bool, True),
    _Setting("devicePluginCDI", "FAKE_GPU_DEVICE_PLUGIN_CDI", _parse_bool, False),
    _Setting("podUID", "FAKE_GPU_POD_UID", _parse_str, ""),
    _Setting("readyPort", "FAKE_GPU_READY_PORT", _parse_port, DEFAULT_READY_PORT),
    _Setting("defects", "FAKE_GPU_DEFECTS", parse_defects, frozenset()),
    _Setting("exposure", "FAKE_GPU_EXPOSURE", parse_exposure, EXPOSURE_FILES),
)


def _read_file(path: Path, problems: list[str]) -> dict[str, Any]:
    try:
        document = yaml.safe_load(path.read_text())
    except OSError as exc:
        problems.append(f"{ENV_CONFIG_FILE}={path}: cannot read: {exc.strerror}")
        return {}
    except yaml.YAMLError as exc:
        problems.append(f"{ENV_CONFIG_FILE}={path}: not valid YAML: {exc}")
        return {}
    if document is None:
        return {}
    if not isinstance(document, dict):
        problems.append(f"{path}: top level must be a mapping, got {type(document).__name__}")
        return {}
    known = {s.key for s in _SETTINGS}
    for key in sorted(set(document) - known, key=str):
        problems.append(f"{path}: unknown key {key!r} (known: {', '.join(sorted(known))})")
    return {k: v for k, v in document.items() if k in known}


def load_config(env: Mapping[str, str] | None = None) -> DriverConfig:
    env = os.environ if env is None else env
    problems: list[str] = []
    raw: dict[str, tuple[Any, str]] = {}  # key -> (value, where it came from)
    config_file = env.get(ENV_CONFIG_FILE)
    if config_file:
        raw.update((k, (v, f"{config_file}:{k}")) for k, v in _read_file(Path(config_file), problems).items())
    for setting in _SETTINGS:
        if setting.env and env.get(setting.env, "") != "":
            raw[setting.key] = (env[setting.env], setting.env)

    values: dict[str, Any] = {}
    for setting in _SETTINGS:
        if setting.key not in raw:
            values[setting.key] = setting.default
            continue
        value, source = raw[setting.key]
        try:
            values[setting.key] = setting.parse(value)
        except ValueError as exc:
            problems.append(f"{setting.key} (from {source}): {exc}")

    node_name = env.get(ENV_NODE_NAME, "").strip()
    if not node_name:
        problems.append(f"{ENV_NODE_NAME} is not set; pass it from the downward API (spec.nodeName)")

    profile = PROFILES.get(values.get("profile") or "")
    if profile is None and "profile" in values:
        problems.append(f"profile {values['profile']!r} is unknown; choose one of: {', '.join(PROFILES)}")

    driver_name = values.get("driverName") or (profile.default_driver_name if profile else "")
    if driver_name and (len(driver_name) > MAX_DRIVER_NAME_LENGTH or not is_dns_subdomain(driver_name)):
        problems.append(
            f"driverName {driver_name!r} must be a lowercase DNS subdomain of at most "
            f"{MAX_DRIVER_NAME_LENGTH} characters (e.g. gpu.example.com)"
        )

    resource_name = values.get("resourceName") or (profile.default_resource_name if profile else "")
    if resource_name and (reason := extended_resource_name_problem(resource_name)):
        problems.append(f"resourceName {resource_name!r} is not a valid extended resource name: {reason}")

    if problems:
        raise ConfigError(problems)
    assert profile is not None  # guaranteed when no problem was found
    return DriverConfig(
        node_name=node_name,
        profile=profile,
        driver_name=driver_name,
        device_count=per_node(node_name, values["nodeDevices"], values["devicesPerNode"]),
        resource_name=resource_name,
        state_dir=values["stateDir"],
        cdi_dir=values["cdiDir"],
        plugin_registry_dir=values["pluginRegistryDir"],
        plugin_data_dir=values["pluginDataDir"],
        device_plugin_dir=values["devicePluginDir"],
        delete_slices_on_exit=values["deleteSlicesOnExit"],
        device_plugin_cdi=values["devicePluginCDI"],
        ready_port=values["readyPort"],
        pod_uid=values["podUID"],
        defects=values["defects"],
        exposure=values["exposure"],
    )
