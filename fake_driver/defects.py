"""Deliberate defects, for proving that the conformance suite catches a broken driver by name.

Configuration only (`defects:` in the driver's config file or FAKE_GPU_DEFECTS=a,b), off by
default; each one breaks a single promise a DRA driver makes. `make selfcheck` deploys the
driver with each defect and requires the requirement IDs listed in conformance/rigs/selfcheck.py
to fail, and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# name -> (area, what goes wrong)
DEFECTS: dict[str, tuple[str, str]] = {
    "env-names-other-gpu": (
        "exposure",
        "FAKE_GPU_<index> names another GPU of the node than the device file mounted for it",
    ),
    "extra-device": (
        "exposure",
        "every prepared container also gets the node's GPU after its last one, which was not allocated to it",
    ),
    "env-extra-gpu": (
        "exposure",
        "every prepared container's environment also names the node's GPU after its last one, "
        "with no device file mounted for it",
    ),
    "prepare-next-device": (
        "allocation",
        "NodePrepareResources exposes the GPU after each allocated one instead of the allocated one",
    ),
    "slice-wrong-id": (
        "slices",
        "the ResourceSlice publishes a different identifying attribute than containers are shown",
    ),
    "slice-missing-device": ("slices", "the ResourceSlice publishes one device fewer than the node has"),
    "no-unprepare": (
        "lifecycle",
        "NodeUnprepareResources reports success but keeps the claim prepared (CDI spec and checkpoint leak)",
    ),
    "forgets-prepared-on-restart": (
        "lifecycle",
        "NodeUnprepareResources does nothing for a claim this process did not prepare: after a restart, "
        "claims prepared before it keep their CDI spec and checkpoint entry for good",
    ),
    "fail-multi-device-prepare": ("lifecycle", "NodePrepareResources fails every claim with more than one device"),
    "cdi-unknown-id": (
        "lifecycle",
        "NodePrepareResources answers, for claims of more than one device, with CDI ids its spec does not define",
    ),
    "device-plugin-extra-device": (
        "device-plugin twin",
        "Allocate hands each container one GPU more than the kubelet asked for",
    ),
    "device-plugin-first-device": (
        "device-plugin twin",
        "Allocate hands every container the node's first GPUs, whichever the kubelet chose: "
        "pods on the node at once share devices",
    ),
    "deviceclass-selects-nothing": (
        "API objects",
        "the shipped DeviceClass's selector matches none of the driver's devices",
    ),
    "deviceclass-without-name": ("API objects", "the shipped DeviceClass lacks spec.extendedResourceName"),
}


def parse_defects(value: Any) -> frozenset[str]:
    """A list or a comma-separated string of defect names; raises ValueError naming unknown ones."""
    if isinstance(value, str):
        names = [n.strip() for n in value.split(",") if n.strip()]
    elif isinstance(value, list) and all(isinstance(n, str) for n in value):
        names = value
    else:
        raise ValueError("must be a list of defect names or a comma-separated string")
    unknown = sorted(set(names) - set(DEFECTS))
    if unknown:
        raise ValueError(f"unknown defect(s) {', '.join(unknown)} (known: {', '.join(DEFECTS)})")
    return frozenset(names)


def neighbour(items: Iterable[Any], item: Any) -> Any:
    """The element after `item` in `items`, wrapping around: "another GPU of the same node"."""
    seq = list(items)
    return seq[(seq.index(item) + 1) % len(seq)]
