"""Reads requirements.yaml into typed objects, refusing anything malformed.

Its structure is catalogue.schema.json's (JSON Schema, like the profiles'): keys the schema
does not know are refused, so that a typo cannot hide a field. What a schema cannot say is
checked here: an ID starting with its area, version ranges in order and apart, references between
entries, the gate against a version table (by default kube.features.VERSIONS). Every problem
found is reported at once (CatalogueError.problems), each with its location.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from jsonschema import Draft202012Validator, ValidationError

from conformance.catalogue.model import Catalogue, Gate, Judges, KnownBug, Requirement, Source, Status
from kube.features import VERSIONS, VersionInfo, VersionTable
from kube.versions import VersionRange, format_minor, parse_minor

SCHEMA = Path(__file__).with_name("catalogue.schema.json")

T = TypeVar("T")


class CatalogueError(ValueError):
    def __init__(self, origin: str, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(f"{origin}: invalid catalogue:\n" + "\n".join(f"  - {p}" for p in problems))


class _Invalid(Exception):
    """One located problem; ends the reading of the item it was found in."""


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


def schema_problems(raw: object) -> list[str]:
    """Every way `raw` departs from the schema, one line each, located."""
    validator = Draft202012Validator(json.loads(SCHEMA.read_text()))
    return [_problem(raw, err) for err in sorted(validator.iter_errors(raw), key=lambda e: list(map(str, e.path)))]


def _problem(raw: object, err: ValidationError) -> str:
    where = _where(raw, list(err.absolute_path))
    schema: Mapping[str, Any] = err.schema if isinstance(err.schema, Mapping) else {}
    expected: Any = err.validator_value
    instance: Any = err.instance
    described = schema.get("description")
    if err.validator in ("required", "not") and described:  # a rule between fields, said in its own words
        return f"{where}: {described}"
    if err.validator == "required":
        return f"{where}: missing {', '.join(k for k in expected if k not in instance)}"
    if err.validator == "additionalProperties":
        return f"{where}: unknown {', '.join(sorted(set(instance) - set(schema.get('properties', {}))))}"
    if err.validator == "enum":
        return f"{where}: {err.instance!r} is not one of {', '.join(expected)}"
    if err.validator == "const":
        return f"{where}: expected {expected!r}, got {err.instance!r}"
    if described:
        return f"{where}: expected {described}, got {err.instance!r}"
    return f"{where}: {err.message}"


def _where(raw: object, path: list[object]) -> str:
    """requirements[3] NAME-2.applies.min: list items named with their ID where they have one."""
    text, node = "", raw
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
            node = node[part] if isinstance(node, list) and part < len(node) else None
            if isinstance(node, dict) and isinstance(node.get("id"), str):
                text += f" {node['id']}"
        else:
            text += f".{part}" if text else str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return text or "top level"


def parse(raw: object, origin: str, table: VersionTable) -> Catalogue:
    problems = schema_problems(raw)
    if problems:
        raise CatalogueError(origin, problems)
    assert isinstance(raw, dict)  # the schema's top level is an object
    areas, suite_areas = raw["areas"], raw.get("suite_areas", {})
    if set(areas) & set(suite_areas):
        problems.append(f"suite_areas repeats areas: {', '.join(sorted(set(areas) & set(suite_areas)))}")
    bugs = _each(raw.get("known_bugs", []), "known_bugs", _bug, problems)
    requirements = _each(
        raw["requirements"], "requirements", lambda item, where: _requirement(item, where, table), problems
    )
    problems += _check_references(requirements, bugs, {**areas, **suite_areas}, raw["topologies"], table)
    if problems:
        raise CatalogueError(origin, problems)
    return Catalogue(
        tuple(raw["gate_components"]),
        {**areas, **suite_areas},
        dict(raw["topologies"]),
        table,
        tuple(bugs),
        {req.id: req for req in requirements},
        frozenset(suite_areas),
    )


# --- items, their structure already the schema's -----------------------------------------------


def _bug(bug: dict[str, Any], where: str) -> KnownBug:
    versions = _checked(f"{where}.versions", VersionRange.parse, bug["versions"])
    fixed_in = None if bug.get("fixed_in") is None else parse_minor(bug["fixed_in"])
    if fixed_in is not None and (versions.max is None or fixed_in <= versions.max):
        raise _Invalid(f"{where}.fixed_in: {format_minor(fixed_in)} is not after the affected versions {versions}")
    return KnownBug(
        id=bug["id"],
        versions=versions,
        summary=bug["summary"].strip(),
        fixed_in=fixed_in,
        status=Status(bug.get("status", Status.CONFIRMED.value)),
        prs=tuple(bug.get("prs", ())),
        issues=tuple(bug.get("issues", ())),
    )


def _requirement(req: dict[str, Any], where: str, table: VersionTable) -> Requirement:
    req_id, area = req["id"], req["area"]
    if req_id.split("-")[0] != area:
        raise _Invalid(f"{where}: ID {req_id} does not start with its area {area}")
    applies, source = req["applies"], req["source"]
    return Requirement(
        id=req_id,
        area=area,
        title=req["title"].strip(),
        text=req["text"].strip(),
        versions=_checked(f"{where}.applies", _applies_range, applies),
        gate=Gate(applies.get("gate", Gate.ENABLED.value)),
        source=Source(
            spec=source["spec"],
            kep=source.get("kep"),
            code=tuple(source.get("code", ())),
            e2e=tuple(source.get("e2e", ())),
            prs=tuple(source.get("prs", ())),
            issues=tuple(source.get("issues", ())),
            docs=tuple(source.get("docs", ())),
        ),
        status=Status(req["status"]),
        question=_stripped(req.get("question")),
        settled=_stripped(req.get("settled")),
        topology=req["topology"].strip(),
        table=table,
        by_version=_by_version(req.get("by_version"), f"{where}.by_version"),
        serial=req.get("serial", False),
        informational=req.get("informational", False),
        judges=Judges(req.get("judges", Judges.CLUSTER.value)),
        needs_explicit_name=req.get("explicit_name", False),
        bugs=tuple(req.get("bugs", ())),
        related=tuple(req.get("related", ())),
    )


def _stripped(text: str | None) -> str | None:
    return None if text is None else text.strip()


def _applies_range(applies: dict[str, Any]) -> VersionRange:
    high = applies.get("max")
    return VersionRange(parse_minor(applies["min"]), None if high is None else parse_minor(high))


def _by_version(raw: dict[str, str] | None, where: str) -> tuple[tuple[VersionRange, str], ...]:
    if raw is None:
        return ()
    entries = sorted(
        ((_checked(f"{where} key {key!r}", VersionRange.parse, key), outcome.strip()) for key, outcome in raw.items()),
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


# --- helpers ------------------------------------------------------------------------------------


def _each(raw: list[Any], where: str, read: Callable[[Any, str], T], problems: list[str]) -> list[T]:
    """Reads every item, recording failures in `problems` so that one run reports them all."""
    read_items = []
    for index, item in enumerate(raw):
        try:
            read_items.append(read(item, f"{where}[{index}] {item['id']}"))
        except _Invalid as err:
            problems.append(str(err))
    return read_items


def _checked(where: str, convert: Callable[[Any], T], raw: Any) -> T:
    try:
        return convert(raw)
    except ValueError as err:
        raise _Invalid(f"{where}: {err}") from None
