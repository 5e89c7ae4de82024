"""The requirement catalogue: validation on load, version/gate selection, spec coverage, docs in sync."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from conformance.catalogue import (
    CatalogueError,
    Gate,
    Status,
    UnknownRequirementError,
    catalogue,
    load,
    requirement,
    select,
)
from conformance.catalogue.__main__ import main
from conformance.catalogue.markdown import COMMAND, render
from conformance.catalogue.spec import SpecItem, compare, parse_spec, read_frozen
from kube.features import DRAExtendedResource, VersionInfo, VersionTable

REPO = Path(__file__).resolve().parents[2]


# --- small catalogues for the validation tests ------------------------------------------------


def _row(minor: int, default: bool, locked: bool, stage: str | None = None) -> VersionInfo:
    return VersionInfo(
        (1, minor), stage or ("GA" if locked else "beta"), default, locked, "GA", ("resource.k8s.io/v1",)
    )


# The version table the small catalogues are read against (the project's is kube.features.VERSIONS).
TABLE = VersionTable(DRAExtendedResource, (_row(35, False, False), _row(36, True, False), _row(37, True, True)))


def _req(req_id: str, area: str = "API", **fields: Any) -> dict[str, Any]:
    return {
        "id": req_id,
        "area": area,
        "title": "t",
        "text": "Something MUST happen.",
        "applies": {"min": "1.35"},
        "source": {"spec": "3.1"},
        "status": "confirmed",
        "topology": "dra",
        **fields,
    }


def _doc() -> dict[str, Any]:
    return {
        "schema": 2,
        "gate_components": ["kubelet"],
        "areas": {"API": "API", "NAME": "Names"},
        "topologies": {"dra": "DRA nodes", "gate-cycle": "gate switched"},
        "known_bugs": [{"id": "BUG-1", "versions": "1.35", "fixed_in": "1.36", "summary": "s"}],
        "requirements": [_req("API-1"), _req("NAME-1", area="NAME", bugs=["BUG-1"], related=["API-1"])],
    }


def _write(tmp_path: Path, doc: dict[str, Any]) -> Path:
    path = tmp_path / "catalogue.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _problems(tmp_path: Path, mutate: Callable[[dict[str, Any]], None]) -> list[str]:
    doc = copy.deepcopy(_doc())
    mutate(doc)
    with pytest.raises(CatalogueError) as caught:
        load(_write(tmp_path, doc), TABLE)
    return caught.value.problems


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A mutation setting doc[...][...] along a dotted path (numbers index lists); None deletes."""

    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = [int(part) if part.isdigit() else part for part in path.split(".")]
        target: Any = doc
        for part in parents:
            target = target[part]
        if value is None:
            del target[last]
        else:
            target[last] = value

    return mutate


def test_minimal_catalogue_loads(tmp_path: Path) -> None:
    # Guards the negative cases below: each of them breaks exactly one thing of this document.
    cat = load(_write(tmp_path, _doc()), TABLE)
    assert list(cat.requirements) == ["API-1", "NAME-1"]
    assert cat.requirement("NAME-1").bugs == ("BUG-1",)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda doc: doc["requirements"].append(_req("API-1")), "duplicate requirement ID API-1"),
        (_set("requirements.0.id", "api-1"), "expected an ID such as NAME-3"),
        (_set("requirements.0.id", "API1"), "expected an ID such as NAME-3"),
        (_set("requirements.0.id", "API-1-b"), "expected an ID such as NAME-3"),
        (_set("requirements.1.id", "API-2"), "does not start with its area NAME"),
        (_set("areas", {"API": "API"}), "unknown area 'NAME'"),
        (_set("requirements.0.topology", "moon"), "unknown topology 'moon'"),
        (_set("requirements.0.applies.min", 1.3), 'expected a quoted minor such as "1.35"'),
        (_set("requirements.0.applies.min", "v1.35"), "got 'v1.35'"),
        (_set("requirements.0.applies.max", "1.34"), "range ends (1.34) before it starts (1.35)"),
        (_set("requirements.0.applies.min", "1.33"), "before the version table"),
        (_set("requirements.0.text", "  "), "text: expected non-empty text"),
        (_set("requirements.0.title", None), "missing title"),
        (_set("requirements.0.titel", "typo"), "unknown titel"),
        (_set("requirements.0.status", "unconfirmed"), "needs a question"),
        (_set("requirements.0.question", "why?"), "a confirmed requirement has no question"),
        (_set("requirements.0.status", "settled"), "needs a question"),
        (_set("requirements.0.settled", "yes"), "only a settled requirement has an answer"),
        (_set("requirements.0.applies.gate", True), "True is not one of enabled, disabled, any"),
        (_set("requirements.0.by_version", {"1.35": "a"}), "at least two version ranges"),
        (_set("requirements.0.by_version", {"1.35-1.36": "a", "1.36+": "b"}), "ranges 1.35-1.36 and 1.36+ overlap"),
        (_set("requirements.0.by_version", {"1.35": "a", "1.36+": ""}), "expected non-empty text"),
        (_set("requirements.1.bugs", ["BUG-9"]), "unknown known bug 'BUG-9'"),
        (_set("requirements.1.related", ["NAME-1"]), "is not another requirement"),
        (_set("requirements.0.source.spec", "§3.1"), "expected a section number"),
        (_set("requirements.0.source.prs", ["#123"]), "expected a positive number"),
        (_set("known_bugs.0.fixed_in", "1.35"), "is not after the affected versions"),
        (_set("schema", 1), "schema: expected 2"),
        # The version table is Python data in kube/features.py now, no longer part of the YAML.
        (_set("versions", []), "unknown versions"),
    ],
)
def test_invalid_catalogue_is_refused(tmp_path: Path, mutate: Callable[[dict[str, Any]], None], expected: str) -> None:
    problems = _problems(tmp_path, mutate)
    assert any(expected in problem for problem in problems), problems


def test_gate_off_requirement_needs_a_version_where_the_gate_can_be_off_or_emulated(tmp_path: Path) -> None:
    doc = copy.deepcopy(_doc())
    doc["requirements"][0]["applies"]["gate"] = "disabled"
    load(_write(tmp_path, doc), TABLE)  # 1.37 is locked, but emulating 1.36 switches it off
    always_locked = VersionTable(DRAExtendedResource, (_row(35, True, True),))
    with pytest.raises(CatalogueError, match="locked on with no earlier minor to emulate"):
        load(_write(tmp_path, doc), always_locked)


def test_all_problems_are_reported_at_once(tmp_path: Path) -> None:
    def break_both(doc: dict[str, Any]) -> None:
        doc["requirements"][0]["text"] = ""
        doc["requirements"][1]["applies"]["min"] = "one"

    problems = _problems(tmp_path, break_both)
    assert len(problems) == 2, problems
    assert "requirements[0] API-1.text" in problems[0] and "requirements[1] NAME-1.applies" in problems[1]


def test_repeated_yaml_key_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, _doc())
    path.write_text(path.read_text() + "schema: 2\n")
    with pytest.raises(CatalogueError, match="repeated key 'schema'"):
        load(path, TABLE)


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ((), "is empty"),
        ((_row(36, True, False), _row(35, False, False)), "unique and in increasing order"),
        ((_row(35, False, False), _row(35, False, False)), "unique and in increasing order"),
    ],
)
def test_invalid_version_table_is_refused(rows: tuple[VersionInfo, ...], expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        VersionTable(DRAExtendedResource, rows)


def test_unknown_gate_stage_is_refused() -> None:
    with pytest.raises(ValueError, match="'stable' is not one of alpha, beta, GA"):
        _row(35, True, True, stage="stable")


# --- the project's catalogue ------------------------------------------------------------------


def test_catalogue_covers_exactly_the_frozen_spec_ids() -> None:
    frozen = read_frozen()
    assert frozen, "conformance/catalogue/spec_ids.txt lists no IDs"
    assert compare(frozen, catalogue()) == []


def test_docs_are_in_sync_with_the_catalogue() -> None:
    docs = REPO / "docs" / "requirements.md"
    assert docs.read_text() == render(catalogue()), f"docs/requirements.md is stale; run `{COMMAND}`"


def test_cli_check_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 0
    assert f"{len(catalogue().requirements)} requirements, consistent" in capsys.readouterr().out


def test_cli_check_fails_on_an_invalid_catalogue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _doc()
    doc["requirements"][0]["id"] = "bad"
    assert main(["--catalogue", str(_write(tmp_path, doc)), "check"]) == 1
    assert "expected an ID such as NAME-3" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("req_id", "version", "gate", "applies", "reason"),
    [
        # Implicit names: from 1.35, where the alpha gate is off unless switched on.
        ("NAME-2", (1, 34), True, False, "the scheduler does not honour implicit names"),
        ("NAME-2", (1, 35), True, True, "applies to 1.35 with DRAExtendedResource on"),
        ("NAME-2", (1, 35), None, False, "it is off on 1.35 (the version's default)"),
        ("NAME-2", (1, 36), None, True, "with DRAExtendedResource on"),
        ("NAME-2", (1, 37), True, True, "with DRAExtendedResource on"),
        # Needs the gate off, so only up to 1.36.
        ("API-2", (1, 35), None, True, "with DRAExtendedResource off"),
        ("API-2", (1, 36), False, True, "with DRAExtendedResource off"),
        ("API-2", (1, 36), True, False, "needs DRAExtendedResource off, it is on"),
        ("API-2", (1, 37), None, False, "needs DRAExtendedResource off, it is on on 1.37 (the version's default)"),
        # Gate-independent.
        ("API-5", (1, 35), False, True, "with DRAExtendedResource off"),
        ("API-5", (1, 36), True, True, "with DRAExtendedResource on"),
        # Admission fix in 1.36; the earlier behaviour is given as the reason.
        ("KUBELET-3", (1, 34), True, False, "BUG-6"),
        ("KUBELET-3", (1, 35), True, True, "with DRAExtendedResource on"),
        ("KUBELET-3", (1, 36), True, True, "with DRAExtendedResource on"),
        ("GATE-4", (1, 36), True, False, "covers Kubernetes 1.37+"),
        ("GATE-4", (1, 37), None, True, "with DRAExtendedResource on"),
        ("UPGRADE-1", (1, 38), None, False, "covers Kubernetes 1.35-1.37"),
        # Beyond the table the last row (GA, locked on) stands.
        ("NAME-1", (1, 40), None, True, "with DRAExtendedResource on"),
    ],
)
def test_applies_to(req_id: str, version: tuple[int, int], gate: bool | None, applies: bool, reason: str) -> None:
    result, why = requirement(req_id).applies_to(version, gate)
    assert result is applies, why
    assert reason in why


def test_applies_to_refuses_a_gate_state_the_version_cannot_have() -> None:
    with pytest.raises(ValueError, match="locked to True in 1.37"):
        requirement("API-5").applies_to((1, 37), False)


def test_expected_outcome_by_version() -> None:
    claim = requirement("CLAIM-2")
    assert "blockOwnerDeletion is true" in (claim.expected((1, 34)) or "")
    assert "not set" in (claim.expected((1, 37)) or "")
    assert requirement("NAME-1").expected((1, 36)) is None


def test_unknown_requirement_id_is_a_clear_error() -> None:
    with pytest.raises(UnknownRequirementError, match="'NAME-77' is not in the catalogue"):
        requirement("NAME-77")
    with pytest.raises(UnknownRequirementError, match="did you mean .*ALLOC-1"):
        requirement("ALOC-1")


def test_select_by_area_and_topology() -> None:
    mixed = select(area="MIXED")
    assert [req.id for req in mixed] == ["MIXED-1", "MIXED-2", "MIXED-3", "MIXED-4"]
    assert {req.id for req in select(topology="gate-cycle", serial=True)} >= {"GATE-1", "API-2"}
    with pytest.raises(ValueError, match="unknown topology 'moon'"):
        select(topology="moon")


def test_cluster_changing_topologies_are_serial() -> None:
    # Anything but the shared `dra` cluster changes nodes, drivers, gates or versions.
    parallel = [req.id for req in select(serial=False) if req.topology != "dra"]
    assert parallel == []


def test_gate_off_requirements_use_the_gate_cycle_topology() -> None:
    misplaced = [
        req.id
        for req in catalogue().requirements.values()
        if req.gate is Gate.DISABLED and req.topology != "gate-cycle"
    ]
    assert misplaced == []


def test_unconfirmed_requirements_carry_a_question() -> None:
    unconfirmed = [req for req in catalogue().requirements.values() if req.status is Status.UNCONFIRMED]
    assert unconfirmed and all(req.question for req in unconfirmed)


# --- spec extraction --------------------------------------------------------------------------

SPEC = """\
## 2. Model
* **API-99** — not a requirement section.

## 3. Normative requirements
### 3.1 API
* **API-1** — a field is accepted.
  *Source.* *>=1.34.*
* **API-2** — something else,
  to be settled on a cluster (UNCONFIRMED).
### 3.2 Names
A paragraph under a heading belongs to no item, even when it says UNCONFIRMED.
* **NAME-1** — names resolve.

## 4. Coverage
* **NAME-2** — outside section 3.
"""


def test_parse_spec_reads_section_3_items_and_marks() -> None:
    assert parse_spec(SPEC) == [SpecItem("API-1", False), SpecItem("API-2", True), SpecItem("NAME-1", False)]


def test_parse_spec_refuses_a_document_without_section_3() -> None:
    with pytest.raises(ValueError, match="no section"):
        parse_spec("## 1. Versions\n")


def test_the_suites_own_areas_are_not_compared_with_the_spec(tmp_path: Path) -> None:
    doc = _doc()
    doc["suite_areas"] = {"FAULT": "Faults"}
    doc["requirements"].append(_req("FAULT-1", area="FAULT"))
    cat = load(_write(tmp_path, doc), TABLE)
    assert cat.from_spec() == ["API-1", "NAME-1"] and "FAULT" in cat.areas
    assert compare([SpecItem("API-1", False), SpecItem("NAME-1", False)], cat) == []
    doc["suite_areas"] = {"API": "again"}
    with pytest.raises(CatalogueError, match="suite_areas repeats areas: API"):
        load(_write(tmp_path, doc), TABLE)


def test_compare_reports_missing_extra_order_and_status(tmp_path: Path) -> None:
    cat = load(_write(tmp_path, _doc()), TABLE)
    assert compare([SpecItem("API-1", False), SpecItem("NAME-1", False)], cat) == []
    assert compare([SpecItem("API-1", False)], cat) == ["NAME-1: in the catalogue, not in the spec"]
    assert compare([SpecItem("API-1", False), SpecItem("NAME-1", False), SpecItem("API-3", False)], cat) == [
        "API-3: in the spec, missing from the catalogue"
    ]
    assert "position 1" in compare([SpecItem("NAME-1", False), SpecItem("API-1", False)], cat)[0]
    assert compare([SpecItem("API-1", True), SpecItem("NAME-1", False)], cat) == [
        "API-1: the spec makes it unconfirmed (or settled), the catalogue says confirmed"
    ]


def test_cli_spec_diff_fails_on_a_differing_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.md"
    spec.write_text(SPEC)
    assert main(["spec-diff", str(spec)]) == 1
    assert "API-3: in the catalogue, not in the spec" in capsys.readouterr().err
