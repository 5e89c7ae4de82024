"""make upstream-e2e's pure parts (no cluster): the spec -> requirement mapping, reading a Ginkgo
JSON report, the comparison with our verdicts and the page it is written into."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from clusters.topology import ClusterSpec
from clusters.versions import resolve
from conformance.catalogue import catalogue
from conformance.catalogue.upstream_e2e import MappingError, mapping, parse
from conformance.report import upstream_e2e as table
from conformance.rigs.upstream_e2e import LANES, compared, every_comparison, focus

LABELS = [[], ["DRA"], ["FeatureGate:DRAExtendedResource", "Feature:DynamicResourceAllocation"]]


def _spec(text: str, state: str, labels: list[list[str]] = LABELS, message: str = "") -> dict[str, object]:
    return {
        "ContainerHierarchyTexts": ["[sig-node]", "[DRA]", ""],
        "ContainerHierarchyLabels": labels,
        "LeafNodeType": "It",
        "LeafNodeText": text,
        "LeafNodeLabels": ["KubeletMinVersion:1.34"],
        "State": state,
        "RunTime": 12_500_000_000,
        "Failure": {"Message": message} if message else {},
    }


def _report(path: Path, *specs: dict[str, object]) -> Path:
    suite = {
        "SuiteDescription": "Kubernetes e2e suite",
        "SpecReports": [*specs, {"LeafNodeType": "SynchronizedBeforeSuite"}],
    }
    path.write_text(json.dumps([suite]))
    return path


def test_every_mapped_id_is_in_the_catalogue() -> None:
    known = set(catalogue().requirements)
    for spec in mapping().specs:
        assert set(spec.ids) <= known, f"{spec.key}: {set(spec.ids) - known} not in the catalogue"


def test_renamed_specs_are_found_by_each_of_their_texts() -> None:
    specs = mapping()
    old = specs.spec_for("must run a pod with extended resource with one container one resource")
    new = specs.spec_for("must run a pod with explicit extended resource with one container one resource")
    assert old is not None and old is new


def test_a_text_or_key_twice_is_refused() -> None:
    raw = {"specs": [{"key": "a", "texts": ["t"], "ids": ["NAME-1"]}, {"key": "b", "texts": ["t"], "ids": ["NAME-1"]}]}
    with pytest.raises(MappingError, match="repeated"):
        parse(raw)
    with pytest.raises(MappingError, match="unknown fields"):
        parse({"specs": [{"key": "a", "texts": ["t"], "ids": ["NAME-1"], "id": "typo"}]})


def test_only_gate_labelled_it_specs_are_read(tmp_path: Path) -> None:
    path = _report(
        tmp_path / "r.json",
        _spec("must reject pod with invalid extended resource name [KubeletMinVersion:1.34] [Serial]", "passed"),
        _spec("must prevent overcommitment of extended resources", "failed", message="pod2 never ran\nmore"),
        _spec("supports claim and class parameters", "skipped", labels=[[], ["DRA"]]),
    )
    results = table.read_ginkgo(path)
    assert [(r.text, r.state, r.failure) for r in results] == [
        ("must reject pod with invalid extended resource name", "passed", ""),
        ("must prevent overcommitment of extended resources", "failed", "pod2 never ran"),
    ]
    assert results[0].seconds == pytest.approx(12.5)


@pytest.mark.parametrize(
    "state, ours, expected",
    [
        ("passed", {"ALLOC-1": "passed", "ALLOC-2": "passed"}, table.AGREE),
        ("passed", {"ALLOC-1": "passed", "ALLOC-2": "not tested"}, table.AGREE),
        ("passed", {"ALLOC-1": "failed", "ALLOC-2": "passed"}, table.DISAGREE),
        ("passed", {"ALLOC-1": "error"}, table.DISAGREE),
        ("failed", {"ALLOC-1": "passed"}, table.DISAGREE),
        ("failed", {"ALLOC-1": "deviates"}, table.AGREE),
        ("timedout", {"ALLOC-1": "failed"}, table.AGREE),
        ("skipped", {"ALLOC-1": "passed"}, table.NOT_COMPARED),
        ("passed", {"ALLOC-1": "not tested", "ALLOC-2": "not applicable"}, table.NOT_COMPARED),
    ],
)
def test_agreement(state: str, ours: dict[str, str], expected: str) -> None:
    assert table.agreement(state, ours) == expected


def test_comparison_rows_absent_specs_and_unmapped_ones() -> None:
    results = [
        table.SpecResult("must reject pod with invalid extended resource name", "passed", 3.0),
        table.SpecResult("a spec added upstream later", "passed", 1.0),
    ]
    c = table.compare("v1.37.2, cluster `dra`", results, {"NEG-3": "passed"}, mapping())
    rows = {r.key: r for r in c.rows}
    assert rows["invalid-name"].agreement == table.AGREE and rows["invalid-name"].ours == {"NEG-3": "passed"}
    assert rows["quota"].state == "absent" and rows["quota"].agreement == table.NOT_COMPARED
    assert [r.text for r in c.unmapped] == ["a spec added upstream later"]
    assert not c.disagreements
    only = table.compare("mixed", results, {}, mapping(), mapping().device_plugin_specs().specs)
    assert {r.key for r in only.rows} == {s.key for s in mapping().specs if s.device_plugin}


def test_page_keeps_its_hand_written_part(tmp_path: Path) -> None:
    page = tmp_path / "upstream-e2e.md"
    page.write_text("# Upstream e2e\n\nWhy and how.\n")
    c = table.compare("v1.37.2, cluster `dra`", [], {}, mapping())
    c.notes.append("our preflight failed | gate off")
    table.write_into(page, table.markdown([c], mapping()))
    first = page.read_text()
    table.write_into(page, table.markdown([c], mapping()))
    assert page.read_text() == first
    assert first.startswith("# Upstream e2e\n\nWhy and how.\n") and first.count(table.BEGIN) == 1
    assert "| `quota` must run a pod with extended resource with resource quota |" in first
    assert "dl.k8s.io" in first  # the offline list, with its reasons
    assert "- our preflight failed \\| gate off\n" in first


def test_device_plugin_focus_selects_exactly_those_specs() -> None:
    regex = re.compile(focus(mapping(), device_plugin_only=True))
    for spec in mapping().specs:
        assert all(bool(regex.search(t)) == spec.device_plugin for t in spec.texts), spec.key
    assert focus(mapping(), device_plugin_only=False) == r"\[FeatureGate:DRAExtendedResource\]"


def test_a_failed_preflight_of_ours_is_noted(tmp_path: Path) -> None:
    ours = tmp_path / "ours" / "existing"
    ours.mkdir(parents=True)
    preflight = [{"name": "existing: gate kube-apiserver", "verdict": "failed", "detail": "on, the suite needs it off"}]
    summary = {"requirements": [{"id": "NEG-3", "verdict": "failed"}], "context": {"preflight": preflight}}
    (ours / "summary.json").write_text(json.dumps(summary))
    _report(tmp_path / "upstream.json", _spec("must reject pod with invalid extended resource name", "passed"))
    c = compared(ClusterSpec("dra", resolve("1.35"), purpose="upstream"), LANES[0], mapping(), tmp_path)
    assert [r.agreement for r in c.rows if r.key == "invalid-name"] == [table.DISAGREE]
    assert c.notes == [
        "our preflight failed, so each of our tests failed with it: existing: gate kube-apiserver: on, the suite needs it off"
    ]


def test_the_page_keeps_the_tables_of_clusters_this_run_did_not_make(tmp_path: Path) -> None:
    def reports_of(version: str, topology: str, started: str) -> None:
        out = tmp_path / ClusterSpec(topology, resolve(version), purpose="upstream").name
        (out / "ours" / "existing").mkdir(parents=True)
        summary = {"requirements": [{"id": "NEG-3", "verdict": "passed"}], "context": {"started": started}}
        (out / "ours" / "existing" / "summary.json").write_text(json.dumps(summary))
        _report(out / "upstream.json", _spec("must reject pod with invalid extended resource name", "passed"))

    reports_of("1.35", "dra", "2026-12-01T10:00:00Z")
    reports_of("1.37", "mixed", "2026-12-02T10:00:00Z")
    made = {(resolve("1.36").tag, "dra"): table.Comparison("made now")}
    titles = [c.title for c in every_comparison(argparse.Namespace(out=tmp_path), mapping(), made)]
    assert titles == [
        f"{resolve('1.37').tag}, cluster `mixed` (run of 2026-12-02)",
        "made now",
        f"{resolve('1.35').tag}, cluster `dra` (run of 2026-12-01)",
    ]
