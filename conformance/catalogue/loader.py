"""Reads requirements.yaml into typed objects, refusing anything malformed.

Every problem found is reported at once (CatalogueError.problems), each with its location.
Keys that the schema does not know are refused, so that a typo cannot hide a field.
Requirements are checked against a version table, by default kube.features.VERSIONS.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

import yaml

from conformance.catalogue.model import Catalogue, Gate, Judges, KnownBug, Requirement, Source, Status
from kube.features import VERSIONS, VersionInfo, VersionTable
from kube.versions import VersionRange, format_minor, parse_minor

SCHEMA_VERSION = 2  # 2: the version table and the gate's name moved to kube/features.py
REQUIREMENT_ID = re.compile(r"[A-Z]+-[0-9]+[a-z]?")
BUG_ID = re.compile(r"BUG-[0-9]+")
AREA_ID = re.compile(r"[A-Z]+")
TOPOLOGY_NAME = re.compile(r"[a-z][a-z0-9-]*")
SPEC_SECTION = re.compile(r"[0-9]+(\.[0-9]+)*")

T = TypeVar("T")
E = TypeVar("E", bound=StrEnum)


class CatalogueError(ValueError):
    def __init__(self, origin: str, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(f"{origin}: invalid catalogue:\n" + "\n".join(f"  - {p}" for p in problems))


class _Invalid(Exception):
    """One located problem; ends the parsing of the item it was found in."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML silently keeps the last of repeated keys; in a hand-edited catalogue that is a mistake."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"repeated key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def load(path: Path, table: VersionTable = VERSIONS) -> Catalogue:
    try:
        raw = yaml.load(path.read_text(), Loader=_UniqueKeyLoader)
    except (OSError, yaml.YAMLError) as err:
        raise CatalogueError(str(path), [str(err)]) from err
    return parse(raw, str(path), table)


def parse(raw: object, origin: str, table: VersionTable) -> Catalogue:
    problems: list[str] = []
    try:
        top = _fields(
            raw,
            "top level",
            ("schema", "gate_components", "areas", "topologies", "requirements"),
            ("known_bugs", "suite_areas"),
        )
        if top["schema"] != SCHEMA_VERSION:
            raise _Invalid(f"schema: expected {SCHEMA_VERSION}, got {top['schema']!r}")
        components = _list(top["gate_components"], "gate_components", _text)
        areas = _names(top["areas"], "areas", AREA_ID)
        suite_areas = _names(top["suite_areas"], "suite_areas", AREA_ID) if "suite_areas" in top else {}
        if set(areas) & set(suite_areas):
            raise _Invalid(f"suite_areas repeats areas: {', '.join(sorted(set(areas) & set(suite_areas)))}")
        topologies = _names(top["topologies"], "topologies", TOPOLOGY_NAME)
    except _Invalid as err:
        raise CatalogueError(origin, [str(err)]) from None
    bugs = _each(top.get("known_bugs") or [], "known_bugs", _bug, problems)
    requirements = _each(
        top["requirements"], "requirements", lambda item, where: _requirement(item, where, table), problems
    )
    problems += _check_references(requirements, bugs, {**areas, **suite_areas}, topologies, table)
    if problems:
        raise CatalogueError(origin, problems)
    return Catalogue(
        components,
        {**areas, **suite_areas},
        topologies,
        table,
        tuple(bugs),
        {req.id: req for req in requirements},
        frozenset(suite_areas),
    )


# --- items -------------------------------------------------------------------------------------


def _bug(raw: object, where: str) -> KnownBug:
    bug = _fields(raw, where, ("id", "versions", "summary"), ("fixed_in", "status", "prs", "issues"))
    bug_id = _id(bug["id"], where, BUG_ID)
    versions = _checked(f"{where}.versions", VersionRange.parse, bug["versions"])
    fixed_in = None if bug.get("fixed_in") is None else _checked(f"{where}.fixed_in", parse_minor, bug["fixed_in"])
    if fixed_in is not None and (versions.max is None or fixed_in <= versions.max):
        raise _Invalid(f"{where}.fixed_in: {format_minor(fixed_in)} is not after the affected versions {versions}")
    return KnownBug(
        id=bug_id,
        versions=versions,
        summary=_text(bug["summary"], f"{where}.summary"),
        fixed_in=fixed_in,
        status=_choice(bug.get("status", Status.CONFIRMED.value), f"{where}.status", Status),
        prs=_list(bug.get("prs"), f"{where}.prs", _number),
        issues=_list(bug.get("issues"), f"{where}.issues", _number),
    )


def _requirement(raw: object, where: str, table: VersionTable) -> Requirement:
    req = _fields(
        raw,
        where,
        ("id", "area", "title", "text", "applies", "source", "status", "topology"),
        ("question", "settled", "by_version", "serial", "informational", "judges", "explicit_name", "bugs", "related"),
    )
    req_id = _id(req["id"], where, REQUIREMENT_ID)
    area = _text(req["area"], f"{where}.area")
    if req_id.split("-")[0] != area:
        raise _Invalid(f"{where}: ID {req_id} does not start with its area {area}")
    applies = _fields(req["applies"], f"{where}.applies", ("min",), ("max", "gate"))
    status = _choice(req["status"], f"{where}.status", Status)
    question = _optional_text(req.get("question"), f"{where}.question")
    settled = _optional_text(req.get("settled"), f"{where}.settled")
    if (status is not Status.CONFIRMED) != (question is not None):
        raise _Invalid(
            f"{where}: an unconfirmed or settled requirement needs a question, a confirmed one must have none"
        )
    if (status is Status.SETTLED) != (settled is not None):
        raise _Invalid(f"{where}: a settled requirement needs the answer (settled:), and only a settled one has it")
    return Requirement(
        id=req_id,
        area=area,
        title=_text(req["title"], f"{where}.title"),
        text=_text(req["text"], f"{where}.text"),
        versions=_checked(f"{where}.applies", _applies_range, applies),
        gate=_choice(applies.get("gate", Gate.ENABLED.value), f"{where}.applies.gate", Gate),
        source=_source(req["source"], f"{where}.source"),
        status=status,
        question=question,
        settled=settled,
        topology=_text(req["topology"], f"{where}.topology"),
        table=table,
        by_version=_by_version(req.get("by_version"), f"{where}.by_version"),
        serial=_flag(req.get("serial", False), f"{where}.serial"),
        informational=_flag(req.get("informational", False), f"{where}.informational"),
        judges=_choice(req.get("judges", Judges.CLUSTER.value), f"{where}.judges", Judges),
        needs_explicit_name=_flag(req.get("explicit_name", False), f"{where}.explicit_name"),
        bugs=_list(req.get("bugs"), f"{where}.bugs", _text),
        related=_list(req.get("related"), f"{where}.related", _text),
    )


def _applies_range(applies: dict[str, Any]) -> VersionRange:
    high = applies.get("max")
    return VersionRange(parse_minor(applies["min"]), None if high is None else parse_minor(high))


def _source(raw: object, where: str) -> Source:
    src = _fields(raw, where, ("spec",), ("kep", "code", "e2e", "prs", "issues", "docs"))
    section = _text(src["spec"], f"{where}.spec")
    if not SPEC_SECTION.fullmatch(section):
        raise _Invalid(f'{where}.spec: {section!r} is not a section number such as "3.4"')
    return Source(
        spec=section,
        kep=_optional_text(src.get("kep"), f"{where}.kep"),
        code=_list(src.get("code"), f"{where}.code", _text),
        e2e=_list(src.get("e2e"), f"{where}.e2e", _text),
        prs=_list(src.get("prs"), f"{where}.prs", _number),
        issues=_list(src.get("issues"), f"{where}.issues", _number),
        docs=_list(src.get("docs"), f"{where}.docs", _text),
    )


def _by_version(raw: object, where: str) -> tuple[tuple[VersionRange, str], ...]:
    if raw is None:
        return ()
    # A single entry would record no difference between versions.
    if not isinstance(raw, dict) or len(raw) < 2:
        raise _Invalid(f"{where}: expected a mapping of at least two version ranges to outcomes")
    entries = sorted(
        (
            (_checked(f"{where} key {key!r}", VersionRange.parse, key), _text(outcome, f"{where}[{key}]"))
            for key, outcome in raw.items()
        ),
        key=lambda entry: entry[0].min,
    )
    for (first, _), (second, _) in zip(entries, entries[1:]):
        if first.overlaps(second):
            raise _Invalid(f"{where}: ranges {first} and {second} overlap")
    return tuple(entries)


# --- whole-catalogue checks --------------------------------------------------------------------


def _check_references(
    requirements: list[Requirement],
    bugs: list[KnownBug],
    areas: dict[str, str],
    topologies: dict[str, str],
    table: VersionTable,
) -> list[str]:
    problems = _duplicates("requirement", [req.id for req in requirements])
    problems += _duplicates("known bug", [bug.id for bug in bugs])
    req_ids = {req.id for req in requirements}
    bug_ids = {bug.id for bug in bugs}
    first = table.rows[0].minor
    for req in requirements:
        if req.area not in areas:
            problems.append(f"{req.id}: unknown area {req.area!r} (known: {', '.join(areas)})")
        if req.topology not in topologies:
            problems.append(f"{req.id}: unknown topology {req.topology!r} (known: {', '.join(topologies)})")
        problems += [f"{req.id}: unknown known bug {bug!r}" for bug in req.bugs if bug not in bug_ids]
        problems += [
            f"{req.id}: related {other!r} is not another requirement"
            for other in req.related
            if other not in req_ids or other == req.id
        ]
        if req.versions.min < first:
            problems.append(
                f"{req.id}: starts at {format_minor(req.versions.min)}, before the version table "
                f"({format_minor(first)})"
            )
        # Where the gate is locked on, it can be off only in a control plane emulating an older minor.
        if req.gate is Gate.DISABLED and any(
            row.gate_locked and row.gate_default and table.switchable_as(row.minor) is None
            for row in _rows_within(table, req.versions)
        ):
            problems.append(
                f"{req.id}: needs the gate off, but {req.versions} reaches versions "
                "where it is locked on with no earlier minor to emulate"
            )
    return problems


def _rows_within(table: VersionTable, versions: VersionRange) -> list[VersionInfo]:
    """The rows that govern some minor of `versions`."""
    first = table.row_for(versions.min)
    return [row for row in table.rows if row is first or row.minor in versions]


def _duplicates(kind: str, ids: list[str]) -> list[str]:
    return [f"duplicate {kind} ID {item}" for item, count in Counter(ids).items() if count > 1]


# --- field helpers -----------------------------------------------------------------------------


def _each(raw: object, where: str, parse_item: Callable[[object, str], T], problems: list[str]) -> list[T]:
    """Parses every item, recording failures in `problems` so that one run reports them all."""
    if not isinstance(raw, list):
        problems.append(f"{where}: expected a list")
        return []
    parsed = []
    for index, item in enumerate(raw):
        label = f"{where}[{index}]" + (f" {item['id']}" if isinstance(item, dict) and "id" in item else "")
        try:
            parsed.append(parse_item(item, label))
        except _Invalid as err:
            problems.append(str(err))
    return parsed


def _fields(raw: object, where: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _Invalid(f"{where}: expected a mapping, got {type(raw).__name__}")
    missing = [key for key in required if key not in raw]
    unknown = [str(key) for key in raw if key not in required and key not in optional]
    if missing or unknown:
        parts = [f"{label} {', '.join(keys)}" for label, keys in (("missing", missing), ("unknown", unknown)) if keys]
        raise _Invalid(f"{where}: {'; '.join(parts)}")
    return raw


def _checked(where: str, convert: Callable[[Any], T], raw: Any) -> T:
    try:
        return convert(raw)
    except ValueError as err:
        raise _Invalid(f"{where}: {err}") from None


def _text(raw: object, where: str) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise _Invalid(f"{where}: expected non-empty text, got {raw!r}")
    return raw.strip()


def _optional_text(raw: object, where: str) -> str | None:
    return None if raw is None else _text(raw, where)


def _id(raw: object, where: str, pattern: re.Pattern[str]) -> str:
    text = _text(raw, f"{where}.id")
    if not pattern.fullmatch(text):
        raise _Invalid(f"{where}.id: {text!r} does not match {pattern.pattern}")
    return text


def _number(raw: object, where: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw <= 0:
        raise _Invalid(f"{where}: expected a positive number, got {raw!r}")
    return raw


def _flag(raw: object, where: str) -> bool:
    if not isinstance(raw, bool):
        raise _Invalid(f"{where}: expected true or false, got {raw!r}")
    return raw


def _choice(raw: object, where: str, choices: type[E]) -> E:
    if isinstance(raw, str):  # the values of a StrEnum are strings, so nothing else is one of them
        try:
            return choices(raw)
        except ValueError:
            pass
    raise _Invalid(f"{where}: {raw!r} is not one of {', '.join(choices)}")


def _list(raw: object, where: str, item: Callable[[object, str], T]) -> tuple[T, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _Invalid(f"{where}: expected a list")
    return tuple(item(value, f"{where}[{index}]") for index, value in enumerate(raw))


def _names(raw: object, where: str, pattern: re.Pattern[str]) -> dict[str, str]:
    """A mapping of names (matching `pattern`) to non-empty descriptions."""
    if not isinstance(raw, dict) or not raw:
        raise _Invalid(f"{where}: expected a non-empty mapping")
    for name in raw:
        if not isinstance(name, str) or not pattern.fullmatch(name):
            raise _Invalid(f"{where}: {name!r} does not match {pattern.pattern}")
    return {name: _text(text, f"{where}.{name}") for name, text in raw.items()}
