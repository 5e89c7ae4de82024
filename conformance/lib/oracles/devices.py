"""What each container should see versus what its probe says it sees."""

from __future__ import annotations

import json
from collections import Counter

from conformance.lib.checks import Findings
from conformance.lib.objects.special_claim import claim_status
from conformance.lib.objects.workloads import probe_container
from conformance.lib.profile import NAMES_REQUESTS, Probe, Profile
from kube.api import RESOURCE_API, Api, Obj


def device_ids(api: Api, profile: Profile) -> dict[tuple[str, str], str]:
    """(pool, device) -> the id the probe prints, from the driver's ResourceSlices: the value of the
    profile's device attribute, or the device's name when the profile names none."""
    return ids_by(api, profile.driver, profile.probe.device_id_attribute)


def ids_by(api: Api, driver: str, attr: str | None) -> dict[tuple[str, str], str]:
    """(pool, device) -> the value of `attr` (None: the device's name) of each of the driver's
    devices; always text, since that is what a probe prints (an int attribute 3 is "3")."""
    ids = {}
    for s in api.list(RESOURCE_API, "ResourceSlice"):
        if s["spec"]["driver"] != driver:
            continue
        for d in s["spec"].get("devices") or []:
            attrs = d.get("attributes") or {}
            value = (attrs.get(attr) or attrs.get(f"{driver}/{attr}") or {}) if attr else {"name": d["name"]}
            ids[(s["spec"]["pool"]["name"], d["name"])] = str(next(iter(value.values()), ""))
    return ids


def expected_per_container(
    pod: Obj, claim: Obj | None, ids: dict[tuple[str, str], str], probe: Probe
) -> dict[str, list[str]]:
    """container -> sorted probe ids of every request of the special claim mapped to it: each of
    the request's devices, or the request itself for a probe that names requests (read from the
    pod's status alone, so it holds after the claim is gone)."""
    status = claim_status(pod)
    assert status is not None, "expected_per_container is for a pod whose status names its special claim"
    wanted: dict[str, set[str]] = {}
    for m in status["requestMappings"]:
        if probe.names_devices:
            results = (claim or {})["status"]["allocation"]["devices"]["results"]
            shown = {
                ids.get((r["pool"], r["device"]), f"?{r['device']}")
                for r in results
                if r["request"] == m["requestName"]
            }
        else:
            shown = {probe.request_id(status["resourceClaimName"], m["requestName"])}
        wanted.setdefault(m["containerName"], set()).update(shown)
    return {c: sorted(v) for c, v in wanted.items()}


def user_claim_names(pod: Obj) -> dict[str, str | None]:
    """pod-level claim name (spec.resourceClaims[].name) -> ResourceClaim name (generated ones from status;
    None while the status names none yet)."""
    generated = {
        s["name"]: s.get("resourceClaimName") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
    }
    return {
        rc["name"]: rc.get("resourceClaimName") or generated.get(rc["name"])
        for rc in pod["spec"].get("resourceClaims") or []
    }


def user_claim_devices(api: Api, profile: Profile, pod: Obj, ids: dict[tuple[str, str], str]) -> dict[str, list[str]]:
    """container -> probe ids of the profile driver's devices (or requests) in the pod's own claims
    that it uses."""
    ns = pod["metadata"]["namespace"]
    claim_of = user_claim_names(pod)
    wanted: dict[str, list[str]] = {}
    spec = pod["spec"]
    for c in [*(spec.get("initContainers") or []), *spec["containers"]]:
        for ref in (c.get("resources") or {}).get("claims") or []:
            name = claim_of.get(ref["name"]) or ""
            claim = api.get(RESOURCE_API, "ResourceClaim", name, ns) if name else None
            results = (
                (((claim or {}).get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])
            )
            wanted.setdefault(c["name"], []).extend(
                ids.get((r["pool"], r["device"]), f"?{r['device']}")
                if profile.probe.names_devices
                else profile.probe.request_id(name, r["request"])
                for r in results
                if r["driver"] == profile.driver and ref.get("request") in (None, r["request"])
            )
    return wanted


# channel -> the probe's id of a device -> that channel's id of it; None: the channel shows the probe's ids
ChannelIds = dict[str, dict[str, str] | None]


def channel_ids(api: Api, profile: Profile) -> ChannelIds:
    """How each of the profile's channels spells the ids the probe prints, from the ResourceSlices."""
    probe_ids = device_ids(api, profile) if any(c.own_ids for c in profile.probe.channels) else {}
    out: ChannelIds = {}
    for c in profile.probe.channels:
        own = ids_by(api, profile.driver, c.attribute) if c.own_ids else {}
        out[c.name] = {i: own.get(device, f"?{device[1]}") for device, i in probe_ids.items()} if c.own_ids else None
    return out


def as_channel(ids: ChannelIds, channel: str, probe_ids: list[str]) -> list[str]:
    """The ids `channel` must show for a container whose probe must show `probe_ids`."""
    translate = ids.get(channel)
    return probe_ids if translate is None else sorted(translate.get(i, f"?{i}") for i in probe_ids)


def merge(*maps: dict[str, list[str]]) -> dict[str, list[str]]:
    out: dict[str, set[str]] = {}
    for m in maps:
        for k, v in m.items():
            out.setdefault(k, set()).update(v)
    return {k: sorted(v) for k, v in out.items()}


def check_containers_see(api: Api, profile: Profile, pod: Obj, expected: dict[str, list[str]]) -> Findings:
    """Every container's probe shows exactly its devices, through every channel the profile names;
    containers without any see none (CTR-1, KUBELET-2). With a probe that names requests, this shows
    which requests' devices a container got, not which devices: CTR-1 is then not tested."""
    f = Findings()
    if not profile.probe.names_devices:
        f.not_tested("CTR-1", NAMES_REQUESTS)
    spelled = channel_ids(api, profile)
    spec = pod["spec"]
    for c in [*(spec.get("initContainers") or []), *spec["containers"]]:
        seen = probe_container(api, profile, pod, c["name"])
        want = expected.get(c["name"], [])
        output = f"probe output: {seen.raw.strip()[:400]!r}"
        f.check(
            seen.device_ids == want, "CTR-1", f"container {c['name']} sees {seen.device_ids}, expected {want}; {output}"
        )
        for channel, ids in seen.channels.items():
            wanted = as_channel(spelled, channel, want)
            f.check(
                ids == wanted, "CTR-1", f"container {c['name']}: its {channel} show {ids}, expected {wanted}; {output}"
            )
    return f


def one_device(api: Api, driver: str) -> tuple[tuple[str, str], str] | None:
    """A device of `driver` as (pool, name) and a CEL expression true for it alone: an attribute
    whose value no other device of the driver shares (CEL sees a device's attributes, not its name)."""
    attributes: list[tuple[tuple[str, str], str, str]] = []  # (pool, device), qualified name, value as CEL
    for s in api.list(RESOURCE_API, "ResourceSlice"):
        if s["spec"]["driver"] != driver:
            continue
        for d in s["spec"].get("devices") or []:
            for name, typed in (d.get("attributes") or {}).items():
                value = typed.get("string", typed.get("int"))
                if value is not None:
                    qualified = name if "/" in name else f"{driver}/{name}"
                    attributes.append(((s["spec"]["pool"]["name"], d["name"]), qualified, json.dumps(value)))
    shared = Counter((name, value) for _, name, value in attributes)
    unique = sorted((device, name, value) for device, name, value in attributes if shared[(name, value)] == 1)
    if not unique:
        return None
    device, qualified, value = unique[-1]
    domain, name = qualified.rsplit("/", 1)
    return device, f'device.attributes["{domain}"].{name} == {value}'
