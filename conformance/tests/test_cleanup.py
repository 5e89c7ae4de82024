"""A serial test waits for the namespaces earlier tests deleted: they hold devices until gone."""
from __future__ import annotations

import pytest

from conformance.lib import cleanup
from kube.waits import WaitTimeout


class Namespaces:
    """The suite's namespaces as the API would list them; each list() is one poll."""

    def __init__(self, polls: list[list[tuple[str, bool]]]) -> None:
        self.polls, self.calls = polls, 0

    def list(self, api_version: str, kind: str, namespace: str | None = None, label_selector: str = "") -> list[dict]:
        assert (api_version, kind, label_selector) == ("v1", "Namespace", cleanup.SELECTOR)
        poll = self.polls[min(self.calls, len(self.polls) - 1)]
        self.calls += 1
        return [{"metadata": {"name": n, **({"deletionTimestamp": "2026-12-04T15:32:20Z"} if leaving else {})}}
                for n, leaving in poll]


def test_only_namespaces_being_deleted_are_departing() -> None:
    api = Namespaces([[("kep5004-current", False), ("kep5004-earlier", True)]])
    assert cleanup.departing(api) == ["kep5004-earlier"]


def test_waits_until_the_earlier_namespaces_are_gone() -> None:
    api = Namespaces([[("kep5004-earlier", True)], [("kep5004-earlier", True)], [("kep5004-current", False)]])
    cleanup.wait_departed(api, timeout=10)
    assert api.calls >= 3


def test_a_namespace_that_never_goes_is_named() -> None:
    api = Namespaces([[("kep5004-stuck", True)]])
    with pytest.raises(WaitTimeout, match="kep5004-stuck"):
        cleanup.wait_departed(api, timeout=1.5)
