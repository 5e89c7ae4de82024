"""Bringing the driver under test to the point where the suite can start.

For `deploy: fake-driver` profiles the suite installs fake_driver's manifests; for
`preinstalled` ones (a vendor's cluster) it only checks that the driver publishes devices.
Either way it waits until every DRA node's ResourceSlices list the profile's device count.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable

from conformance.lib.objects import cleanup, pods
from conformance.lib.profile import Profile
from fake_driver import manifests
from fake_driver.defects import DEFECTS
from kube.api import Api
from kube.waits import wait_for


def fake_driver_problems(profile: Profile) -> list[str]:
    """What the fake driver would refuse in the profile's fakeDriver settings (none for other
    deploy modes): found before any cluster is made."""
    unknown = sorted(set(profile.fake_driver_defects) - set(DEFECTS))
    return [f"fakeDriver.defects: unknown {', '.join(unknown)} (known: {', '.join(DEFECTS)})"] if unknown else []


def fake_driver_values(profile: Profile, image: str) -> dict[str, str]:
    return {
        "PROFILE": profile.fake_driver_inventory,
        "IMAGE": image,
        "DRIVER_NAME": profile.driver,
        "EXTENDED_RESOURCE_NAME": profile.explicit_name or "",  # "": the class maps no explicit name
        # the device plugin's: a valid extended resource name, which an implicit one is not
        "RESOURCE_NAME": profile.explicit_name or f"{profile.driver}/device",
        # the profile's counts verbatim (the driver matches node names the same way); none else
        "NODE_DEVICES": json.dumps(profile.device_counts),
        "DEVICES_PER_NODE": "0",
        "EXPOSURE": profile.fake_driver_exposure,
        "DEFECTS": json.dumps(list(profile.fake_driver_defects)),
    }


def deploy_fake_driver(kubectl: Callable[..., str], profile: Profile, image: str) -> None:
    """kubectl: a callable running kubectl against the cluster (args..., input=...)."""
    values = fake_driver_values(profile, image)
    kubectl("apply", "-f", "-", input=manifests.render_driver(values))
    kubectl("apply", "-f", "-", input=manifests.render_deviceclasses(values))


def uninstall_fake_driver(kubectl: Callable[..., str], profile: Profile, image: str) -> None:
    values = fake_driver_values(profile, image)
    kubectl("delete", "--ignore-not-found", "--wait=true", "-f", "-", input=manifests.render_deviceclasses(values))
    kubectl("delete", "--ignore-not-found", "--wait=true", "-f", "-", input=manifests.render_driver(values))


def remove_fake_driver(
    api: Api, kubectl: Callable[..., str], profile: Profile, image: str, sweep: bool = True
) -> list[str]:
    """Uninstall the fake driver, after the suite's objects are gone (unless not `sweep`): a pod
    still terminating when its driver goes can never have its claim unprepared, and stays (with
    the claim and its namespace) for good. Returns what was swept.

    Done means its ResourceSlices gone too: each kubelet deletes a departed plugin's slices only
    after a grace period, and a driver deployed again before that would be judged on the old
    ones (seen: preflight passed on them, then the scoring tests found no device at all)."""
    swept = cleanup.sweep(api) if sweep else []
    uninstall_fake_driver(kubectl, profile, image)
    wait_for(
        lambda: not published_devices(api, profile),
        timeout=180,
        interval=2,
        what=f"the ResourceSlices of {profile.driver} gone after its driver was removed",
        describe=lambda: str(dict(published_devices(api, profile))),
    )
    return swept


def dra_nodes(api: Api, profile: Profile) -> list[str]:
    selector = ",".join(f"{k}={v}" for k, v in profile.dra_node_selector.items())
    return sorted(n["metadata"]["name"] for n in api.list("v1", "Node", label_selector=selector))


def published_devices(api: Api, profile: Profile) -> Counter[str]:
    """node -> number of devices the driver publishes for it (0 for a node it publishes none on)."""
    return Counter(pods.dra_capacity(api, profile.driver))


def wait_published(api: Api, profile: Profile, timeout: float = 180) -> dict[str, int]:
    nodes = dra_nodes(api, profile)
    if not nodes:
        raise RuntimeError(f"no node matches the profile's DRA node selector {profile.dra_node_selector}")
    start = time.monotonic()
    expected = {n: profile.devices_on(n) for n in nodes}
    wait_for(
        lambda: {n: published_devices(api, profile)[n] for n in nodes} == expected,
        timeout=timeout,
        what=f"{profile.driver} to publish {expected} devices",
        describe=lambda: str(dict(published_devices(api, profile))),
        interval=2,
    )
    print(f"[driver] {profile.driver}: devices {expected} after {time.monotonic() - start:.0f} s", flush=True)
    return expected


def wait_publishing(api: Api, profile: Profile, timeout: float = 180, steady: float = 10) -> dict[str, int]:
    """Wait until the driver publishes the profile's count on every DRA node, or publishes something
    on each and the counts stayed the same for `steady` seconds (a wrong count is then preflight's
    to name in one line, without waiting out the whole timeout)."""
    nodes = dra_nodes(api, profile)
    last: dict[str, int] = {}
    since = time.monotonic()

    def settled() -> bool:
        nonlocal last, since
        counts = {n: published_devices(api, profile)[n] for n in nodes}
        if counts != last:
            last, since = counts, time.monotonic()
        if all(c == profile.devices_on(n) for n, c in counts.items()):
            return True
        return all(counts.values()) and time.monotonic() - since >= steady

    wait_for(
        lambda: bool(nodes) and settled(),
        timeout=timeout,
        interval=2,
        what=f"{profile.driver} to publish devices on {nodes or 'the nodes the profile selects'}",
        describe=lambda: str(last),
    )
    return last
