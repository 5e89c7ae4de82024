"""The cluster under test, as the helpers that take it read it."""

from __future__ import annotations

from typing import Protocol

from conformance.lib.profile import Profile
from kube.api import Api


class Target(Protocol):
    """What the helpers read of the suite's Target (conformance/suite/conftest.py), which lib/
    cannot import: the suite imports lib/."""

    @property
    def api(self) -> Api: ...

    @property
    def profile(self) -> Profile: ...
