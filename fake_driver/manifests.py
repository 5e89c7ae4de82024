"""Render fake_driver/deploy/*.yaml (string.Template files) with defaults filled in.

    python -m fake_driver.manifests driver [KEY=VALUE ...]         # everything but DeviceClasses
    python -m fake_driver.manifests deviceclasses [KEY=VALUE ...]
    python -m fake_driver.manifests dra-plugin.yaml PROFILE=nvidia  # any single file

Unset names default from PROFILE (driver and resource names) or from DEFAULTS.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from string import Template
from typing import Mapping

import yaml

from fake_driver.defects import parse_defects
from fake_driver.exposure import DEFAULT_STATE_DIR
from fake_driver.inventory import PROFILES

DEPLOY_DIR = Path(__file__).resolve().parent / "deploy"
CONFIG_FILE = "config.yaml"
DRIVER_FILES = ("namespace.yaml", "rbac.yaml", CONFIG_FILE, "dra-plugin.yaml", "device-plugin.yaml")
DEVICECLASS_FILE = "deviceclasses.yaml"

# Node label that selects which plugin runs on a node: "dra", "device-plugin" or "both".
MODE_LABEL = "fake-gpu.kep5004.io/mode"
NAMESPACE = "fake-gpu-driver"
IMAGE = "localhost/kep5004/fake-gpu-driver:dev"
DRA_DAEMONSET = "fake-gpu-dra-plugin"
DEVICE_PLUGIN_DAEMONSET = "fake-gpu-device-plugin"
IMPLICIT_CLASS_PREFIX = "implicit."  # second DeviceClass: implicit.<driver name>

DEFAULTS: Mapping[str, str] = {
    "NAMESPACE": NAMESPACE,
    "IMAGE": IMAGE,
    "PROFILE": "generic",
    "DEVICES_PER_NODE": "8",
    "NODE_DEVICES": "{}",  # YAML/JSON flow mapping node (or pattern) -> count, e.g. {"*-worker2": 2}
    "STATE_DIR": str(DEFAULT_STATE_DIR),
    "DEVICE_PLUGIN_CDI": "false",
    "DEFECTS": "[]",  # YAML flow list of fake_driver.defects names (self-check only)
    "EXPOSURE": "files",  # fake_driver.exposure: files (+ env by uuid) or env-names
}


def template_values(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    values = {**DEFAULTS, **(overrides or {})}
    profile = PROFILES.get(values["PROFILE"])
    if profile is None:
        raise ValueError(f"PROFILE {values['PROFILE']!r} is unknown; choose one of: {', '.join(PROFILES)}")
    values.setdefault("DRIVER_NAME", profile.default_driver_name)
    values.setdefault("RESOURCE_NAME", profile.default_resource_name)  # device plugin's resource
    values.setdefault("EXTENDED_RESOURCE_NAME", values["RESOURCE_NAME"])  # DeviceClass mapping
    return values


def render(file_name: str, overrides: Mapping[str, str] | None = None) -> str:
    """Fails on a placeholder without value, so no `${...}` reaches the API server."""
    values = template_values(overrides)
    text = (DEPLOY_DIR / file_name).read_text()
    if "${CONFIG_HASH}" in text:  # pod templates: a changed config rolls their pods
        config = Template((DEPLOY_DIR / CONFIG_FILE).read_text()).substitute(values)
        values["CONFIG_HASH"] = hashlib.sha256(config.encode()).hexdigest()[:16]
    return Template(text).substitute(values)


def render_driver(overrides: Mapping[str, str] | None = None) -> str:
    return "---\n".join(render(name, overrides) for name in DRIVER_FILES)


def render_deviceclasses(overrides: Mapping[str, str] | None = None) -> str:
    text = render(DEVICECLASS_FILE, overrides)
    defects = parse_defects(yaml.safe_load(template_values(overrides)["DEFECTS"]) or [])
    if "deviceclass-without-name" in defects or not template_values(overrides)["EXTENDED_RESOURCE_NAME"]:
        text = "".join(line for line in text.splitlines(keepends=True) if "extendedResourceName:" not in line)
    if "deviceclass-selects-nothing" in defects:  # a selector of another driver's devices
        text = text.replace("device.driver == ", 'device.driver == "no.such.driver" && device.driver == ')
    return text


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    target, assignments = argv[0], argv[1:]
    overrides = dict(a.split("=", 1) for a in assignments if "=" in a)
    if len(overrides) != len(assignments):
        print("arguments after the target must be KEY=VALUE", file=sys.stderr)
        return 2
    renderers = {"driver": render_driver, "deviceclasses": render_deviceclasses}
    try:
        text = renderers[target](overrides) if target in renderers else render(target, overrides)
    except (KeyError, ValueError, FileNotFoundError) as exc:
        print(f"cannot render {target}: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
