"""Why a scheduled pod does not run, when the cause is on its node: the kubelet could not prepare
its claims through the driver, or the runtime could not hand its containers the CDI devices the
driver's prepare named. Both are KUBELET-1 (the kubelet prepares the claim through the driver:
a prepare whose CDI ids do not resolve did not prepare it).

Such a failure is the driver's (or the kubelet's), not that of the requirement whose wait for
the pod timed out: a prepare error used to surface as ALLOC-6 or NAME-1 timeouts. Found while
waiting, it fails the driver-judged ID at once, with the kubelet's own words and the containers'
waiting reasons as the evidence (the requirement that was waiting then reads `error`, caused by it).
"""

from __future__ import annotations

from datetime import datetime

from conformance.lib.checks import ChargedTo
from kube.api import Api, Obj

# The kubelet's event when NodePrepareResources (or finding the claim) failed for a pod.
PREPARE_FAILED = "FailedPrepareDynamicResources"
# Prepare failing this often over this long is no passing hiccup (a driver pod restarting, as
# in a rolling update, fails a few tries; the kubelet retries with a backoff). Measured between
# the kubelet's own event stamps, so no clock of ours is compared with the node's.
PREPARE_FAILURES_TO_BLAME = 3
PREPARE_FAILING_FOR_S = 60
# Container waiting reasons under which a runtime reports what it could not create.
CREATE_FAILED = ("CreateContainerError", "RunContainerError", "CreateContainerConfigError")


def _when(stamp: object) -> datetime:
    """An event time as the client gives it (a datetime) or as JSON has it (RFC 3339 text)."""
    return stamp if isinstance(stamp, datetime) else datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))


def _waiting(pod: Obj) -> list[tuple[str, str, str]]:
    statuses = [
        *((pod.get("status") or {}).get("initContainerStatuses") or []),
        *((pod.get("status") or {}).get("containerStatuses") or []),
    ]
    return [
        (s["name"], w.get("reason", ""), w.get("message", ""))
        for s in statuses
        if (w := (s.get("state") or {}).get("waiting"))
    ]


def blame(api: Api, pod: Obj, settled: bool = False) -> ChargedTo | None:
    """A node-side cause for `pod` not running, charged to the ID that judges it; None when the
    evidence names none. `settled`: the wait is over, so one failure event is enough."""
    if not (pod.get("spec") or {}).get("nodeName"):
        return None  # not scheduled: allocation, not the node
    name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
    events = [
        e
        for e in api.list("v1", "Event", namespace, field_selector=f"involvedObject.name={name}")
        if e.get("reason") == PREPARE_FAILED and e.get("involvedObject", {}).get("uid") == pod["metadata"]["uid"]
    ]
    failures = sum(e.get("count") or 1 for e in events)
    stamps = sorted(
        t
        for e in events
        for t in (e.get("firstTimestamp") or e.get("eventTime"), e.get("lastTimestamp") or e.get("eventTime"))
        if t
    )
    failing_for = (_when(stamps[-1]) - _when(stamps[0])).total_seconds() if stamps else 0.0
    waiting = _waiting(pod)
    shown = "; ".join(f"container {c} waiting: {r}: {m[:300]}" for c, r, m in waiting) or "no container waiting reason"
    persistent = failures >= PREPARE_FAILURES_TO_BLAME and failing_for >= PREPARE_FAILING_FOR_S
    if events and (settled or persistent):
        last = max(events, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
        return ChargedTo(
            "KUBELET-1",
            f"pod {name} on node {pod['spec']['nodeName']} does not run: the kubelet could "
            f"not prepare its claims through the driver ({failures} {PREPARE_FAILED} "
            f"event(s), last: {last.get('message', '')[:600]}); {shown}",
        )
    cdi = [(c, r, m) for c, r, m in waiting if r in CREATE_FAILED and "cdi" in m.lower()]
    if cdi:
        return ChargedTo(
            "KUBELET-1",
            f"pod {name} on node {pod['spec']['nodeName']} does not run: the CDI devices "
            f"the driver's prepare named could not be injected; {shown}",
        )
    return None
