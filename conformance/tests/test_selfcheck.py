"""make selfcheck tries every defect the fake driver can be given (no cluster needed)."""

from __future__ import annotations

from conformance.catalogue import catalogue
from conformance.rigs.selfcheck import EXPECTED
from fake_driver.defects import DEFECTS


def test_every_defect_of_the_fake_driver_has_what_must_kill_it() -> None:
    # A defect without an expectation would never be tried, and its escape never seen.
    assert set(EXPECTED) == set(DEFECTS)


def test_every_defect_is_to_be_killed_by_requirements_of_the_catalogue() -> None:
    cat = catalogue()
    for defect, expected in EXPECTED.items():
        assert expected.failed or expected.preflight, defect
        for rid in expected.failed:
            cat.requirement(rid)  # raises for an ID the catalogue does not know
