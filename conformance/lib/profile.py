"""Driver profiles: everything the suite needs to know about the DRA driver under test.

The fake driver is just the default profile. A vendor describes its own driver in the same
format (see docs/profiles.md) and the suite runs unchanged against it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from clusters.paths import REPO_ROOT

PROFILES_DIR = REPO_ROOT / "fixtures" / "profiles"
DEPLOY_MODES = ("fake-driver", "preinstalled")
EXTENDED_RESOURCE_NAME = re.compile(r"^(?!kubernetes\.io/|requests\.)[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


class ProfileError(ValueError):
    pass


@dataclass(frozen=True)
class Probe:
    command: tuple[str, ...]
    pattern: re.Pattern[str]
    device_id_attribute: str
    # Further ways the driver tells a container its devices (e.g. environment variables besides
    # device files): name -> pattern; each must show exactly the container's devices too.
    channels: tuple[tuple[str, re.Pattern[str]], ...] = ()

    def device_ids(self, output: str) -> list[str]:
        return sorted(m.group("id") for m in self.pattern.finditer(output))

    def channel_ids(self, output: str) -> dict[str, list[str]]:
        return {name: sorted(m.group("id") for m in pattern.finditer(output)) for name, pattern in self.channels}


@dataclass(frozen=True)
class NodeState:
    """Capability: a command run in the driver's pod on a node that lists the claims the driver
    still holds prepared there (one match of `pattern`, with a group `uid`, per claim)."""
    command: tuple[str, ...]
    pattern: re.Pattern[str]
    pod_selector: str  # label selector of the driver pods to run it in (one per node)

    def claim_uids(self, output: str) -> set[str]:
        return {m.group("uid") for m in self.pattern.finditer(output)}


@dataclass(frozen=True)
class Profile:
    name: str
    driver: str
    device_class: str
    extended_resource_name: str
    devices_per_node: int
    dra_node_selector: dict[str, str]
    device_plugin_node_selector: dict[str, str]
    deploy: str
    workload_image: str
    probe: Probe
    source: Path
    driver_namespace: str | None = None  # where the driver's pods run, for their logs
    driver_selector: str | None = None   # label selector of those pods
    fake_driver_inventory: str = "generic"  # deploy: fake-driver only
    fake_driver_defects: tuple[str, ...] = ()  # deploy: fake-driver only; self-check (fake_driver.defects)
    node_state: NodeState | None = None  # capability: see NodeState

    @property
    def implicit_resource_name(self) -> str:
        return f"deviceclass.resource.kubernetes.io/{self.device_class}"


def load(name_or_path: str) -> Profile:
    """A profile by name (fixtures/profiles/<name>.yaml) or by path; errors say what is wrong."""
    path = Path(name_or_path)
    if not path.suffix:
        path = PROFILES_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PROFILES_DIR.glob("*.yaml")))
        raise ProfileError(f"profile {name_or_path!r} not found (known profiles: {known}; or give a path)")
    raw = yaml.safe_load(path.read_text()) or {}
    try:
        return _parse(raw, path)
    except KeyError as missing:
        raise ProfileError(f"{path}: missing field {missing}") from None


def _parse(raw: dict, path: Path) -> Profile:
    deploy = raw.get("deploy", "preinstalled")
    if deploy not in DEPLOY_MODES:
        raise ProfileError(f"{path}: deploy must be one of {DEPLOY_MODES}, not {deploy!r}")
    ern = raw["extendedResourceName"]
    if not EXTENDED_RESOURCE_NAME.match(ern):
        raise ProfileError(f"{path}: extendedResourceName {ern!r} is not a valid extended resource name")
    count = raw["devicesPerNode"]
    if not isinstance(count, int) or count < 1:
        raise ProfileError(f"{path}: devicesPerNode must be a positive integer, not {count!r}")
    probe = raw["probe"]
    pattern = _id_pattern(probe["pattern"], f"{path}: probe.pattern")
    channels = tuple((name, _id_pattern(text, f"{path}: probe.channels.{name}"))
                     for name, text in (probe.get("channels") or {}).items())
    selectors = raw.get("nodeSelector", {})
    return Profile(
        name=raw["name"], driver=raw["driver"], device_class=raw["deviceClass"],
        extended_resource_name=ern, devices_per_node=count,
        dra_node_selector=dict(selectors.get("dra", {})),
        device_plugin_node_selector=dict(selectors.get("devicePlugin", {})),
        deploy=deploy, workload_image=raw["workloadImage"],
        probe=Probe(tuple(probe["command"]), pattern, probe["deviceIdAttribute"], channels),
        source=path,
        driver_namespace=raw.get("driverPods", {}).get("namespace"),
        driver_selector=raw.get("driverPods", {}).get("selector"),
        fake_driver_inventory=raw.get("fakeDriver", {}).get("inventory", "generic"),
        fake_driver_defects=tuple(raw.get("fakeDriver", {}).get("defects", ())),
        node_state=_node_state(raw.get("nodeState"), path),
    )


def _id_pattern(text: str, where: str) -> re.Pattern[str]:
    try:
        pattern = re.compile(text, re.MULTILINE)
    except re.error as err:
        raise ProfileError(f"{where} is not a valid regular expression: {err}") from None
    if "id" not in pattern.groupindex:
        raise ProfileError(f"{where} needs a named group (?P<id>...)")
    return pattern


def _node_state(raw: dict | None, path: Path) -> NodeState | None:
    if raw is None:
        return None
    pattern = re.compile(raw["pattern"], re.MULTILINE)
    if "uid" not in pattern.groupindex:
        raise ProfileError(f"{path}: nodeState.pattern needs a named group (?P<uid>...)")
    return NodeState(tuple(raw["command"]), pattern, raw["podSelector"])

