"""A probe that did not run to a clean end is no evidence, of devices or of "nothing" (no cluster)."""

from __future__ import annotations

import pytest

from conformance.lib import profile as profiles
from conformance.lib.objects.workloads import ProbeError, probe_container
from conformance.lib.profile import load
from kube.api import ExecError


class Api:
    """A pod whose container `main` is running (exec) or ended with `exit_code` (logs)."""

    def __init__(self, exit_code: int, output: str) -> None:
        self.exit_code, self.output = exit_code, output

    def exec(self, namespace, pod, command, container=None):
        if self.exit_code:
            raise ExecError(f"{namespace}/{pod}", command, self.exit_code, self.output)
        return self.output

    def logs(self, namespace, pod, container):
        return self.output


def pod(state: dict) -> dict:
    return {
        "metadata": {"name": "p", "namespace": "ns"},
        "status": {"containerStatuses": [{"name": "main", "state": state}]},
    }


@pytest.mark.parametrize("profile", ["fake-gpu", "example-gpu"])
def test_a_probe_that_exits_1_and_prints_nothing_fails_naming_the_probe(profile: str) -> None:
    p = load(profile)
    with pytest.raises(
        ProbeError, match=rf"profile {profile}'s probe .* in ns/p container main exited 1: \(no output\)"
    ):
        probe_container(Api(1, ""), p, pod({"running": {}}), "main")
    assert not p.probe.saw_nothing("")  # and an empty output is never "nothing seen"


def test_a_finished_container_is_read_from_its_log_whatever_its_command_exited_with() -> None:
    """A test may end a container with a failure on purpose, after its probe ran."""
    p = load("example-gpu")
    assert probe_container(Api(0, "probe-done\n"), p, pod({"terminated": {"exitCode": 1}}), "main").device_ids == []


def test_a_profile_must_say_what_its_probe_prints_when_it_sees_nothing(tmp_path) -> None:
    text = (profiles.PROFILES_DIR / "example-gpu.yaml").read_text()
    lines = [line for line in text.splitlines() if not line.strip().startswith("nothing:")]
    path = tmp_path / "no-nothing.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(profiles.ProfileError, match="nothing"):
        profiles.load(str(path))
