"""API writes a requirement says must be accepted or refused, as check outcomes.

A refused write that had to be accepted, or an accepted one that had to be refused, is an
AssertionError (so it fails the check it happens in) showing what the API server answered or stored.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TypeVar

from kubernetes.client.exceptions import ApiException

from conformance.lib.checks import Checks

T = TypeVar("T")


def answer(err: ApiException) -> str:
    """The API server's response body (a Status object as text)."""
    return err.body.decode() if isinstance(err.body, bytes) else str(err.body)


def accepted(write: Callable[[], T], what: str) -> T:
    """The result of a write that must succeed."""
    try:
        return write()
    except ApiException as err:
        raise AssertionError(f"{what} was refused with {err.status}: {answer(err)[:800]}") from None


def refused_as_invalid(write: Callable[[], object], what: str, field: str | None = None) -> str:
    """The API server's answer to a write that must fail as 422 Invalid, naming `field` when given."""
    try:
        stored = write()
    except ApiException as err:
        body = answer(err)
        assert err.status == 422, f"{what}: expected 422 Invalid, got {err.status}: {body[:800]}"
        assert field is None or field in body, f"{what}: the rejection does not name {field}: {body[:800]}"
        return body
    raise AssertionError(f"{what} was accepted; stored: {json.dumps(stored, default=str)[:800]}")


def check_refused_as_invalid(
    check: Checks, ids: Sequence[str], write: Callable[[], object], what: str, field: str | None = None
) -> str:
    """Check each of `ids` on one write that must fail as 422 Invalid; returns the answer ("" if none)."""
    try:
        body, problem = refused_as_invalid(write, what, field), ""
    except AssertionError as err:
        body, problem = "", str(err)
    for rid in ids:
        check.that(rid, not problem, problem)
    return body
