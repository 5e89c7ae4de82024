"""The rooms' import rule, checked on every module (no cluster needed): arrows point down, never
back up (docs/architecture.md draws the floors)."""

from __future__ import annotations

import ast
from pathlib import Path

from clusters.paths import REPO_ROOT

BELOW_LIB = {"kube", "clusters", "conformance/catalogue"}
# room -> the rooms its modules may import (a room may always import itself).
ALLOWED: dict[str, set[str]] = {
    "kube": set(),
    "clusters": {"kube"},
    "fake_driver": {"kube"},
    "conformance/catalogue": {"kube"},
    "conformance/lib": BELOW_LIB,
    "conformance/report": BELOW_LIB | {"conformance/lib"},
    "conformance/suite": BELOW_LIB | {"conformance/lib", "conformance/report"},
    "conformance/runner": BELOW_LIB | {"conformance/lib", "conformance/report"},
    "conformance/cli.py": {"conformance/runner"},
    "conformance/rigs": BELOW_LIB | {"conformance/lib", "conformance/report", "conformance/runner", "fake_driver"},
}
# Where a room reaches beyond its floor on purpose, and why.
EXCEPTIONS = {
    # Deploying the project's fake driver on kind clusters is runner setup, not the suite's: no test names it.
    ("conformance/lib/setup/driver_setup.py", "fake_driver"),
}
# The fake driver's image ships only these modules of kube/ (clusters/images/driver.sh).
FAKE_DRIVER_MAY_IMPORT = {"kube", "kube.names"}


def _room(module_path: str) -> str | None:
    for room in sorted(ALLOWED, key=len, reverse=True):
        base = room.removesuffix(".py")
        if module_path == base or module_path.startswith(base + "/"):
            return room
    return None


def _imports() -> list[tuple[str, str, str]]:
    """(file, its room, imported module) for every import of the project's own code outside tests."""
    found = []
    for path in sorted(
        p for top in ("kube", "clusters", "fake_driver", "conformance") for p in (REPO_ROOT / top).rglob("*.py")
    ):
        rel = path.relative_to(REPO_ROOT).as_posix()
        room = _room(rel.removesuffix(".py"))
        if room is None or "/tests/" in rel or "/_gen/" in rel:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found += [(rel, room, node.module), *((rel, room, f"{node.module}.{a.name}") for a in node.names)]
            elif isinstance(node, ast.Import):
                found += [(rel, room, a.name) for a in node.names]
    return found


def test_every_import_points_down_the_floors() -> None:
    upward = []
    for rel, room, module in _imports():
        target = _room(module.replace(".", "/"))
        if target and target != room and target not in ALLOWED[room] and (rel, target) not in EXCEPTIONS:
            upward.append(f"{rel} imports {module} ({room} -> {target})")
    assert not upward, "\n".join(upward)


def test_the_fake_driver_uses_only_what_its_image_ships_of_kube() -> None:
    beyond = {
        f"{rel}: {module}"
        for rel, room, module in _imports()
        if room == "fake_driver"
        and module.startswith("kube")
        and module not in FAKE_DRIVER_MAY_IMPORT
        and not module.startswith("kube.names.")
    }
    assert not beyond, beyond


def test_the_rule_sees_the_imports_it_judges() -> None:
    # An empty or misread import list would pass both tests above without judging anything.
    rooms = {room for _, room, _ in _imports()}
    assert rooms == set(ALLOWED), set(ALLOWED) - rooms
    assert Path(REPO_ROOT / "conformance" / "runner" / "run.py").is_file()


# lib/ by role: the model and verdict recording at its root, then the API objects (builders,
# queries, waits), the oracles judging them, the scenarios around disruptions; runner setup apart.
LIB_ALLOWED: dict[str, set[str]] = {
    "": set(),
    "objects": {""},
    "oracles": {"", "objects"},
    "scenarios": {"", "objects", "oracles", "setup"},
    "setup": {"", "objects"},
}


def test_lib_modules_import_only_roles_below_theirs() -> None:
    def role(module_path: str) -> str:
        first = module_path.removeprefix("conformance/lib").lstrip("/").split("/")[0]
        return first if first in LIB_ALLOWED else ""

    upward = []
    for rel, room, module in _imports():
        target = module.replace(".", "/")
        if room != "conformance/lib" or not target.startswith("conformance/lib"):
            continue
        mine, theirs = role(rel.removesuffix(".py")), role(target)
        if theirs != mine and theirs not in LIB_ALLOWED[mine]:
            upward.append(f"{rel} imports {module} ({mine or 'lib'} -> {theirs or 'lib'})")
    assert not upward, "\n".join(upward)
