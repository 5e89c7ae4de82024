"""Driver profiles: everything the suite needs to know about the DRA driver under test.

The fake driver is just the default profile. A vendor describes its own driver in the same
format (see docs/profiles.md) and the suite runs unchanged against it.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, ValidationError

from clusters.paths import REPO_ROOT
from kube.names import extended_resource_name_problem, per_node

PROFILES_DIR = REPO_ROOT / "fixtures" / "profiles"
WORKLOADS_DIR = REPO_ROOT / "fixtures" / "workloads"
# JSON Schema rather than a model library: the schema file doubles as documentation that
# vendors' editors can validate their profiles with, and jsonschema reports every error with its path.
SCHEMA = PROFILES_DIR / "profile.schema.json"


# Why a check that needs to know which devices a container got is not tested with a probe that
# names requests.
NAMES_REQUESTS = (
    "the profile's probe names requests, not devices (probe.identifies: request): "
    "which devices a container got cannot be seen"
)


class ProfileError(ValueError):
    pass


@dataclass(frozen=True)
class Channel:
    """A further way the driver tells a container its devices (e.g. environment variables beside
    device files): one match of `pattern` per device. Its ids are the probe's own, or, where
    `own_ids`, each device's name (`attribute` None) or that attribute's value."""

    name: str
    pattern: re.Pattern[str]
    own_ids: bool = False
    attribute: str | None = None


@dataclass(frozen=True)
class Probe:
    command: tuple[str, ...]
    pattern: re.Pattern[str]
    device_id_attribute: str | None  # None: the probe prints each device's name
    # What the probe prints when it ran and saw no device: "saw nothing" needs this positive sign
    # (an empty output is also what a probe that never ran gives).
    nothing: re.Pattern[str]
    # Further ways the driver tells a container its devices (e.g. environment variables besides
    # device files): name -> pattern; each must show exactly the container's devices too.
    channels: tuple[Channel, ...] = ()
    # What an id stands for: "device" (one per device), or "request" (one per request of a claim,
    # for drivers that tell a container which requests it got but not which devices; the id is
    # request_template filled in, then request_replace's matches replaced by request_with).
    identifies: str = "device"
    request_template: str = ""
    request_replace: re.Pattern[str] | None = None
    request_with: str = ""

    @property
    def shell(self) -> str:
        """The probe command as one shell word list, to run inside `sh -c`."""
        return shlex.join(self.command)

    @property
    def names_devices(self) -> bool:
        return self.identifies == "device"

    def request_id(self, claim: str, request: str) -> str:
        """The id the probe prints for request `request` of claim `claim` (identifies: request); a
        subrequest ("gpu/large") is known by its request's name."""
        text = self.request_template.format(claim=claim, request=request.split("/")[0])
        return self.request_replace.sub(self.request_with, text) if self.request_replace else text

    def device_ids(self, output: str) -> list[str]:
        return sorted(m.group("id") for m in self.pattern.finditer(output))

    def saw_nothing(self, output: str) -> bool:
        """The probe ran and showed no device through any channel."""
        return (
            not self.device_ids(output)
            and not any(self.channel_ids(output).values())
            and bool(self.nothing.search(output))
        )

    def channel_ids(self, output: str) -> dict[str, list[str]]:
        return {c.name: sorted(m.group("id") for m in c.pattern.finditer(output)) for c in self.channels}


@dataclass(frozen=True)
class NodeState:
    """Capability: a command run in the driver's pod on a node that lists the claims the driver
    still holds prepared there (one match of `pattern`, with a group `uid`, per claim)."""

    command: tuple[str, ...]
    pattern: re.Pattern[str]
    pod_selector: str  # label selector of the driver pods to run it in (one per node)
    container: str | None = None  # the container of those pods that has the command (default: the first)

    def claim_uids(self, output: str) -> set[str]:
        return {m.group("uid") for m in self.pattern.finditer(output)}


@dataclass(frozen=True)
class NodeAccess:
    """Capability: the suite may run a privileged pod in the host's PID namespace on a node, to
    restart its kubelet (`restart_kubelet`, run there) and, where the profile gives a command
    (`reboot`), to restart the machine."""

    image: str
    restart_kubelet: tuple[str, ...] = (
        "nsenter",
        "-t",
        "1",
        "-m",
        "-u",
        "-i",
        "-n",
        "-p",
        "--",
        "systemctl",
        "restart",
        "kubelet",
    )
    reboot: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeModeLabel:
    """Capability: the driver's two plugins follow one node label, so a test can move a node between
    the device plugin and DRA. Modes are "dra", "device-plugin" and "both"."""

    label: str
    values: dict[str, str]  # mode -> label value
    plugin_pods: dict[str, str]  # "dra" / "device-plugin" -> label selector of that plugin's pods

    def mode(self, value: str | None) -> str | None:
        """The mode a label value stands for (None: unlabelled or a value of no mode)."""
        return next((mode for mode, v in self.values.items() if v == value), None)


@dataclass(frozen=True)
class Profile:
    name: str
    driver: str
    device_class: str
    # The DeviceClass's extendedResourceName as installed; None: the driver's class maps no explicit
    # name, and pods reach it by the implicit one only (what some charts install by default).
    explicit_name: str | None
    # node name or shell-style pattern -> devices; "*" alone when every node has the same count
    device_counts: dict[str, int]
    dra_node_selector: dict[str, str]
    device_plugin_node_selector: dict[str, str]
    deploy: str
    workload_image: str
    probe: Probe
    source: Path
    driver_namespace: str | None = None  # where the driver's pods run, for their logs
    driver_selector: str | None = None  # label selector of those pods
    fake_driver_inventory: str = "generic"  # deploy: fake-driver only
    fake_driver_defects: tuple[str, ...] = ()  # deploy: fake-driver only; self-check (fake_driver.defects)
    node_state: NodeState | None = None  # capability: see NodeState
    node_modes: NodeModeLabel | None = None  # capability: see NodeModeLabel
    fake_driver_exposure: str = "files"  # deploy: fake-driver only (fake_driver.exposure)
    workloads: Path | None = None  # directory of the profile's stored workloads
    product: dict[str, str] = field(default_factory=dict)  # PRODUCT.yaml fields of a submission
    node_access: NodeAccess | None = None  # capability: see NodeAccess
    workload_pull_policy: str = "IfNotPresent"
    # (namespace, name) of the Secret the workload image is pulled with; copied into each test namespace
    workload_pull_secret: tuple[str, str] | None = None

    @property
    def implicit_resource_name(self) -> str:
        return f"deviceclass.resource.kubernetes.io/{self.device_class}"

    @property
    def extended_resource_name(self) -> str:
        """The name the suite's pods ask for: the explicit one where installed, else the implicit one."""
        return self.explicit_name or self.implicit_resource_name

    @property
    def served_by(self) -> str:
        """The requirement that judges pods asking for `extended_resource_name` being served."""
        return "NAME-1" if self.explicit_name else "NAME-2"

    def devices_on(self, node: str) -> int:
        """How many devices the driver publishes for `node`, by the profile: the same matching as
        the fake driver's `nodeDevices`, to which a fake-driver profile's counts are handed verbatim."""
        return per_node(node, self.device_counts, 0)


def load(name_or_path: str) -> Profile:
    """A profile by name (fixtures/profiles/<name>.yaml) or by path. Every problem of a bad
    profile is reported at once, each with its path in the document, before anything is created."""
    path = Path(name_or_path)
    if not path.suffix:
        path = PROFILES_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PROFILES_DIR.glob("*.yaml")))
        raise ProfileError(f"profile {name_or_path!r} not found (known profiles: {known}; or give a path)")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ProfileError(f"{path}: not valid YAML: {' '.join(str(err).split())}") from None
    # Both kinds at once: a user mends every problem in one go, not one kind per run.
    problems = schema_problems(raw) + (_semantic_problems(raw, path) if isinstance(raw, dict) else [])
    if problems:
        raise ProfileError(f"{path}: {len(problems)} problem(s):\n" + "\n".join(f"  - {p}" for p in problems))
    return _parse(raw, path)


def schema_problems(raw: object) -> list[str]:
    """What fixtures/profiles/profile.schema.json says is wrong, as `path: message` lines."""
    validator = Draft202012Validator(json.loads(SCHEMA.read_text()))
    errors = sorted(validator.iter_errors(raw), key=lambda e: [str(p) for p in e.absolute_path])
    return [
        f"{'.'.join(str(p) for p in e.absolute_path) or '(top level)'}: {e.message}{_alternatives(e)}" for e in errors
    ]


def _alternatives(error: ValidationError) -> str:
    """Why each alternative of a oneOf/anyOf failed: 'not valid under any of the given schemas' alone does not say."""
    reasons = sorted({sub.message for sub in error.context or ()})
    return f" ({'; '.join(reasons)})" if reasons else ""


def _semantic_problems(raw: dict[str, Any], path: Path) -> list[str]:
    """What a schema cannot say: valid regular expressions with the right groups, a valid
    extended resource name, an existing workload directory, distinct node mode values. (Whether
    fakeDriver's settings are the fake driver's is its own: conformance/lib/setup/driver_setup.py.) Run beside the schema's checks, so it reads only what has the right shape
    (what has not is the schema's to name)."""
    problems = []
    name = raw.get("extendedResourceName")
    if isinstance(name, str) and (why := extended_resource_name_problem(name)):
        problems.append(f"extendedResourceName: {name!r} is not a valid extended resource name: {why}")
    channels = _at(raw, "probe", "channels")
    candidates = {
        "probe.pattern": (_at(raw, "probe", "pattern"), "id"),
        **{
            f"probe.channels.{n}": (t.get("pattern") if isinstance(t, dict) else t, "id")
            for n, t in (channels if isinstance(channels, dict) else {}).items()
        },
        "nodeState.pattern": (_at(raw, "nodeState", "pattern"), "uid"),
        "probe.nothing": (_at(raw, "probe", "nothing"), None),
    }
    patterns = {where: (text, group) for where, (text, group) in candidates.items() if isinstance(text, str)}
    for where, (text, group) in patterns.items():
        try:
            if group and group not in re.compile(text).groupindex:
                problems.append(f"{where}: needs a named group (?P<{group}>...)")
        except re.error as err:
            problems.append(f"{where}: not a valid regular expression: {err}")
    template = _at(raw, "probe", "requestId", "template")
    if isinstance(template, str):
        try:
            template.format(claim="c", request="r")
        except (KeyError, IndexError, ValueError) as err:
            problems.append(f"probe.requestId.template: only {{claim}} and {{request}} may be filled in ({err!r})")
    replace = _at(raw, "probe", "requestId", "replace")
    if isinstance(replace, str):
        try:
            re.compile(replace)
        except re.error as err:
            problems.append(f"probe.requestId.replace: not a valid regular expression: {err}")
    workloads = _workloads_dir(raw.get("workloads"), path) if isinstance(raw.get("workloads"), str | None) else None
    if workloads and not workloads.is_dir():
        problems.append(
            f"workloads: {raw['workloads']!r} is neither a directory under {WORKLOADS_DIR} nor one "
            f"next to the profile ({workloads})"
        )
    if "nodeModes" in raw and "driverPods" not in raw:
        problems.append("nodeModes: needs driverPods.namespace, where its plugin pods run")
    values = _at(raw, "nodeModes", "values")
    values = [str(v) for v in values.values()] if isinstance(values, dict) else []
    if len(set(values)) != len(values):
        problems.append(f"nodeModes.values: each mode needs its own label value, got {values}")
    return problems


def _at(raw: object, *keys: str) -> object:
    """The value at `keys` in nested mappings, or None where a level is missing or no mapping."""
    for key in keys:
        raw = raw.get(key) if isinstance(raw, dict) else None
    return raw


def _parse(raw: dict[str, Any], path: Path) -> Profile:
    probe, selectors = raw["probe"], raw["nodeSelector"]
    state, modes = raw.get("nodeState"), raw.get("nodeModes")
    return Profile(
        name=raw["name"],
        driver=raw["driver"],
        device_class=raw["deviceClass"],
        explicit_name=raw.get("extendedResourceName"),
        device_counts=_device_counts(raw["devicesPerNode"]),
        dra_node_selector=dict(selectors["dra"]),
        device_plugin_node_selector=dict(selectors.get("devicePlugin", {})),
        deploy=raw.get("deploy", "preinstalled"),
        workload_image=raw["workloadImage"],
        probe=_probe(probe),
        source=path,
        driver_namespace=raw.get("driverPods", {}).get("namespace"),
        driver_selector=raw.get("driverPods", {}).get("selector"),
        fake_driver_inventory=raw.get("fakeDriver", {}).get("inventory", "generic"),
        fake_driver_defects=tuple(raw.get("fakeDriver", {}).get("defects", ())),
        node_state=state
        and NodeState(
            tuple(state["command"]),
            re.compile(state["pattern"], re.MULTILINE),
            state["podSelector"],
            state.get("container"),
        ),
        node_modes=modes
        and NodeModeLabel(
            modes["label"],
            {
                "dra": modes["values"]["dra"],
                "device-plugin": modes["values"]["devicePlugin"],
                "both": modes["values"]["both"],
            },
            {"dra": modes["draPluginPods"], "device-plugin": modes["devicePluginPods"]},
        ),
        fake_driver_exposure=raw.get("fakeDriver", {}).get("exposure", "files"),
        workloads=_workloads_dir(raw.get("workloads"), path),
        product=dict(raw.get("product") or {}),
        node_access=_node_access(raw.get("nodeAccess"), raw["workloadImage"]),
        workload_pull_policy=raw.get("workloadImagePullPolicy", "IfNotPresent"),
        workload_pull_secret=(secret := raw.get("workloadImagePullSecret")) and (secret["namespace"], secret["name"]),
    )


def _probe(raw: dict[str, Any]) -> Probe:
    request_id = raw.get("requestId") or {}
    return Probe(
        tuple(raw["command"]),
        re.compile(raw["pattern"], re.MULTILINE),
        raw.get("deviceIdAttribute"),
        re.compile(raw["nothing"], re.MULTILINE),
        tuple(_channel(n, t) for n, t in (raw.get("channels") or {}).items()),
        identifies=raw.get("identifies", "device"),
        request_template=request_id.get("template", ""),
        request_replace=re.compile(request_id["replace"]) if "replace" in request_id else None,
        request_with=request_id.get("with", ""),
    )


def _channel(name: str, raw: str | dict[str, Any]) -> Channel:
    """A pattern alone shows the probe's ids; {pattern, deviceIdAttribute?} ids of its own."""
    if isinstance(raw, str):
        return Channel(name, re.compile(raw, re.MULTILINE))
    return Channel(name, re.compile(raw["pattern"], re.MULTILINE), own_ids=True, attribute=raw.get("deviceIdAttribute"))


def _node_access(raw: dict[str, Any] | None, workload_image: str) -> NodeAccess | None:
    if raw is None:
        return None
    access = NodeAccess(raw.get("image", workload_image), reboot=tuple(raw.get("reboot") or ()))
    return (
        dataclasses.replace(access, restart_kubelet=tuple(raw["restartKubelet"])) if "restartKubelet" in raw else access
    )


def _device_counts(value: int | dict[str, int]) -> dict[str, int]:
    return {"*": value} if isinstance(value, int) else dict(value)


def _workloads_dir(value: str | None, profile_path: Path) -> Path | None:
    """A directory under fixtures/workloads by name, else a path (relative to the profile's file)."""
    if value is None:
        return None
    named = WORKLOADS_DIR / value
    return named if named.is_dir() else (profile_path.parent / value).resolve()
