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


def base() -> dict:
    return yaml.safe_load((PROFILES_DIR / "fake-gpu.yaml").read_text())


def test_every_schema_problem_is_reported_with_its_path(tmp_path):
    doc = base()
    del doc["driver"], doc["workloadImage"]
    doc["devicesPerNode"] = "eight"
    doc["nodeSelector"] = {"dra": "x"}
    with pytest.raises(ProfileError) as err:
        profiles.load(write(tmp_path, doc))
    text = str(err.value)
    for expected in ("'driver' is a required property", "'workloadImage' is a required property",
                     "devicesPerNode: 'eight' is not of type 'integer'", "nodeSelector.dra: 'x' is not of type 'object'"):
        assert expected in text
    assert "4 problem(s)" in text


@pytest.mark.parametrize("doc, expected", [
    ("- a list\n", "(top level): ['a list'] is not of type 'object'"),
    ("name: [unclosed\n", "not valid YAML"),
])
def test_wrong_shapes_are_one_clear_error(tmp_path, doc, expected):
    with pytest.raises(ProfileError, match=expected.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        profiles.load(write(tmp_path, doc))


def test_patterns_names_and_defects_are_checked_beyond_the_schema(tmp_path):
    doc = base()
    doc["extendedResourceName"] = "gpu"
    doc["probe"]["pattern"] = "^FAKEGPU (\\S+)"
    doc["probe"]["channels"] = {"env": "(?P<id>"}
    doc["fakeDriver"]["defects"] = ["no-such-defect"]
    with pytest.raises(ProfileError) as err:
        profiles.load(write(tmp_path, doc))
    text = str(err.value)
    assert "extendedResourceName: 'gpu' is not a valid" in text
    assert "probe.pattern: needs a named group (?P<id>...)" in text
    assert "probe.channels.env: not a valid regular expression" in text
    assert "fakeDriver.defects: unknown no-such-defect" in text
