"""A pod that never runs because of its node is charged to the ID that judges the cause (no cluster)."""

from __future__ import annotations

import pytest

from conformance.lib.checks import ChargedTo, Check, Checks, CheckStopped
from conformance.lib.objects import node_failures, pods


class Api:
    def __init__(self, pod: dict, events: list[dict]) -> None:
        self.pod, self.events = pod, events

    def get(self, api_version, kind, name, namespace=None):
        return self.pod

    def list(self, api_version, kind, namespace=None, **selectors):
        return self.events


def pod(phase: str = "Pending", node: str | None = "worker", waiting: dict | None = None) -> dict:
    status = {"phase": phase}
    if waiting:
        status["containerStatuses"] = [{"name": "main", "state": {"waiting": waiting}}]
    return {"metadata": {"name": "gpu", "namespace": "ns", "uid": "u1"}, "spec": {"nodeName": node}, "status": status}


def prepare_failed(count: int, first: str, last: str) -> dict:
    return {
        "reason": node_failures.PREPARE_FAILED,
        "count": count,
        "firstTimestamp": first,
        "lastTimestamp": last,
        "involvedObject": {"uid": "u1"},
        "message": "NodePrepareResources failed: boom",
    }


def test_prepare_failing_for_a_minute_is_the_driver_s_not_the_wait_s() -> None:
    api = Api(pod(), [prepare_failed(4, "2026-12-06T10:00:00Z", "2026-12-06T10:01:05Z")])
    with pytest.raises(
        ChargedTo, match=r"^\[KUBELET-1\] pod gpu on node worker does not run: .*\(4 FailedPrepareDynamicResources"
    ):
        pods.wait_running(api, "ns", "gpu", timeout=5)


def test_a_passing_prepare_hiccup_is_waited_out() -> None:
    """A driver pod restarting (a rolling update) fails a few tries: not blamed while waiting."""
    api = Api(pod(), [prepare_failed(2, "2026-12-06T10:00:00Z", "2026-12-06T10:00:10Z")])
    assert node_failures.blame(api, api.pod) is None
    assert node_failures.blame(api, api.pod, settled=True).rid == "KUBELET-1"  # but named once the wait is over


def test_cdi_devices_the_runtime_could_not_inject_are_the_driver_s_prepare() -> None:
    waiting = {
        "reason": "CreateContainerError",
        "message": "failed to inject CDI devices: unresolvable CDI devices x.com/gpu=9",
    }
    cause = node_failures.blame(Api(pod(waiting=waiting), []), pod(waiting=waiting))
    assert cause.rid == "KUBELET-1" and "unresolvable CDI devices" in cause.message


def test_an_unscheduled_pod_is_no_node_s_failure() -> None:
    assert (
        node_failures.blame(
            Api(pod(node=None), [prepare_failed(9, "2026-12-06T10:00:00Z", "2026-12-06T10:09:00Z")]), pod(node=None)
        )
        is None
    )


def test_the_check_that_waited_records_the_failure_under_the_charged_id_and_stops() -> None:
    recorded: list[Check] = []
    check = Checks({"NAME-1"}, recorded.append)
    with pytest.raises(CheckStopped):
        with check("NAME-1"):
            raise ChargedTo("KUBELET-1", "prepare failed")
    assert [(c.id, c.verdict) for c in recorded] == [("KUBELET-1", "failed")]
