"""Profiles: every shipped one is valid; a bad one is refused with every problem and its path."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conformance.lib import profile as profiles
from conformance.lib.profile import PROFILES_DIR, ProfileError


@pytest.mark.parametrize("path", sorted(PROFILES_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_profiles_load(path: Path):
    loaded = profiles.load(str(path))
    assert loaded.probe.device_ids("") == []


def write(tmp_path: Path, doc: object) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc) if not isinstance(doc, str) else doc)
    return str(path)


def refusal(tmp_path: Path, doc: object) -> str:
    """The error text of loading `doc` as a profile, which must be refused."""
    with pytest.raises(ProfileError) as err:
        profiles.load(write(tmp_path, doc))
    return str(err.value)


def base() -> dict:
    return yaml.safe_load((PROFILES_DIR / "fake-gpu.yaml").read_text())


def test_every_schema_problem_is_reported_with_its_path(tmp_path):
    doc = base()
    del doc["driver"], doc["workloadImage"]
    doc["devicesPerNode"] = "eight"
    doc["nodeSelector"] = {"dra": "x"}
    text = refusal(tmp_path, doc)
    for expected in (
        "'driver' is a required property",
        "'workloadImage' is a required property",
        "devicesPerNode: 'eight' is not valid under any of the given schemas ('eight' is not of type 'integer'; "
        "'eight' is not of type 'object')",
        "nodeSelector.dra: 'x' is not of type 'object'",
    ):
        assert expected in text
    assert "4 problem(s)" in text


@pytest.mark.parametrize(
    "doc, expected",
    [
        ("- a list\n", "(top level): ['a list'] is not of type 'object'"),
        ("name: [unclosed\n", "not valid YAML"),
    ],
)
def test_wrong_shapes_are_one_clear_error(tmp_path, doc, expected):
    with pytest.raises(ProfileError, match=expected.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        profiles.load(write(tmp_path, doc))


def test_patterns_names_and_defects_are_checked_beyond_the_schema(tmp_path):
    doc = base()
    doc["extendedResourceName"] = "gpu"
    doc["probe"]["pattern"] = "^FAKEGPU (\\S+)"
    doc["probe"]["channels"] = {"env": "(?P<id>"}
    text = refusal(tmp_path, doc)
    assert "extendedResourceName: 'gpu' is not a valid extended resource name: needs a domain prefix" in text
    assert "probe.pattern: needs a named group (?P<id>...)" in text
    assert "probe.channels.env: not a valid regular expression" in text


def test_unknown_fake_driver_defects_are_refused_before_anything_is_made(tmp_path):
    from conformance.runner.options import load_profiles

    doc = base()
    doc["fakeDriver"]["defects"] = ["no-such-defect"]
    with pytest.raises(ProfileError, match="fakeDriver.defects: unknown no-such-defect"):
        load_profiles(write(tmp_path, doc))


def test_device_counts_per_node_pattern_first_match_wins():
    example = profiles.load("example-gpu")
    assert [example.devices_on(n) for n in ("kep5004-dra-137-worker", "kep5004-dra-137-worker2")] == [36, 3]
    assert profiles.load("fake-gpu").devices_on("anything") == 8
    doc = base()
    doc["devicesPerNode"] = {"big": 40}
    assert profiles.Profile.devices_on(profiles._parse(doc, PROFILES_DIR / "x.yaml"), "small") == 0


def test_second_personality_reads_device_names_from_a_shell_probe():
    example = profiles.load("example-gpu")
    output = "GPU_DEVICE_0=gpu-0\nGPU_DEVICE_10=gpu-10\nprobe-done\n"
    assert example.probe.device_ids(output) == ["gpu-0", "gpu-10"] and example.probe.device_id_attribute is None
    assert example.probe.saw_nothing("probe-done\n") and not example.probe.saw_nothing("")
    assert example.node_state is None and example.workloads.name == "example-gpu"
    assert example.node_modes.mode("device-plugin") == "device-plugin" and example.node_modes.mode(None) is None


def test_capabilities_and_workloads_are_checked_beyond_the_schema(tmp_path):
    doc = base()
    doc["workloads"] = "no-such-set"
    del doc["driverPods"]
    doc["nodeModes"]["values"]["both"] = "dra"
    text = refusal(tmp_path, doc)
    assert "workloads: 'no-such-set' is neither a directory under" in text
    assert "nodeModes: needs driverPods.namespace" in text
    assert "nodeModes.values: each mode needs its own label value" in text


def test_a_class_without_an_explicit_name_is_describable_and_its_pods_ask_for_the_implicit_one():
    from conformance.lib.profile import load

    p = load("fake-gpu-implicit")
    assert p.explicit_name is None and p.extended_resource_name == "deviceclass.resource.kubernetes.io/gpu.nvidia.com"
    assert p.served_by == "NAME-2" and load("fake-gpu").served_by == "NAME-1"


def test_preflight_requires_the_class_to_map_no_name_where_the_profile_declares_none():
    from conformance.lib.profile import load
    from conformance.lib.setup import preflight

    class Api:
        def __init__(self, spec):
            self.spec = spec

        def get(self, *args, **kwargs):
            return {"spec": self.spec}

    p = load("fake-gpu-implicit")
    assert preflight.deviceclass_item(Api({}), p).verdict == "passed"
    item = preflight.deviceclass_item(Api({"extendedResourceName": "nvidia.com/gpu"}), p)
    assert item.verdict == "failed" and "the profile says None" in item.detail


def test_schema_and_semantic_problems_are_reported_together(tmp_path):
    import pytest

    from conformance.lib.profile import PROFILES_DIR, ProfileError, load

    text = (PROFILES_DIR / "fake-gpu.yaml").read_text()
    text = text.replace("devicesPerNode: 8", "devicesPerNode: many")  # a schema problem
    text = text.replace("pattern: '^FAKEGPU uuid=(?P<id>\\S+)'", "pattern: '^FAKEGPU uuid=(\\S+)'")  # a semantic one
    path = tmp_path / "both.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError) as err:
        load(str(path))
    assert "devicesPerNode" in str(err.value) and "probe.pattern: needs a named group (?P<id>...)" in str(err.value)


def test_a_probe_that_names_requests_gives_each_request_its_id_as_the_driver_spells_it():
    """Kubernetes' test driver sets claim_<claim>_<request>=true, every other character made "_"."""
    probe = profiles.load("k8s-test-driver").probe
    assert not probe.names_devices
    assert (
        probe.request_id("pod-extended-resources-x7k", "container-0-request-0")
        == "claim_pod_extended_resources_x7k_container_0_request_0"
    )
    assert probe.request_id("c", "gpu/large") == "claim_c_gpu"  # a subrequest is its request's
    assert probe.device_ids("claim_a_b=true\nprobe-done\n") == ["claim_a_b"]


@pytest.mark.parametrize(
    "request_id, expected",
    [
        (None, "probe: 'requestId' is a required property"),
        ({"template": "{claim}"}, "probe.requestId.template: '{claim}' does not match"),
        ({"template": "{claim}_{request}_{device}"}, "only {claim} and {request} may be filled in"),
        ({"template": "{claim}_{request}", "replace": "["}, "probe.requestId.replace: not a valid regular expression"),
    ],
)
def test_a_request_naming_probe_needs_a_sound_request_id(tmp_path, request_id, expected):
    doc = base()
    del doc["probe"]["deviceIdAttribute"]
    doc["probe"]["identifies"] = "request"
    if request_id is not None:
        doc["probe"]["requestId"] = request_id
    assert expected in refusal(tmp_path, doc)


def test_a_request_id_belongs_only_to_a_probe_that_names_requests(tmp_path):
    doc = base()
    doc["probe"]["requestId"] = {"template": "{claim}_{request}"}
    assert "probe: " in refusal(tmp_path, doc)


def test_a_channel_may_name_devices_its_own_way_and_its_pattern_is_checked(tmp_path):
    doc = base()
    doc["probe"]["channels"] = {"env": {"pattern": "^GPU=(?P<id>\\S+)$"}, "labels": {"pattern": "^(\\S+)$"}}
    assert "probe.channels.labels: needs a named group (?P<id>...)" in refusal(tmp_path, doc)
    del doc["probe"]["channels"]["labels"]
    env = profiles.load(write(tmp_path, doc)).probe.channels[0]
    assert (env.name, env.own_ids, env.attribute) == ("env", True, None)
