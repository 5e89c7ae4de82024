"""The configuration a DeviceClass carries for its driver reaches the special claim (KEP-3).

The suite's other classes carry no configuration, so a scheduler that dropped a class's config
when it allocates for an extended resource name would pass them all; here the class carries an
opaque parameter of the suite's own, which must appear in the special claim's allocation as
coming from the class and applying to the claim's request of that name (1.37.2 names no request,
which the API reads as all of them). Only the claim is judged: whether a
driver accepts a parameter it does not know is its own business.
"""

from __future__ import annotations

import uuid

import pytest

from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import special_claim
from conformance.suite.conftest import Target
from kube.api import Obj
from kube.waits import wait_for


@pytest.mark.requirement("KEP-3")
def test_the_class_configuration_is_in_the_special_claims_allocation(
    target: Target, check: Checks, namespace: str, request: pytest.FixtureRequest
) -> None:
    api, p = target.api, target.profile
    name = f"example.com/configured-{uuid.uuid4().hex[:8]}"
    parameters = {"kep5004_marker": uuid.uuid4().hex}
    pods.create_device_class(api, request, p.driver, name, prefix="configured", parameters=parameters)
    api.create(pods.pod("configured", [pods.container("main", p, {name: 1})]), namespace)

    def allocated() -> tuple[Obj, Obj] | None:  # the pod once its special claim is allocated
        pod = pods.get(api, namespace, "configured")
        claim = special_claim(api, pod)
        return (pod, claim) if claim and (claim.get("status") or {}).get("allocation") else None

    with check("KEP-3", stop=True):
        pod, claim = wait_for(
            allocated,
            timeout=180,
            interval=2,
            what="pod configured's special claim allocated",
            describe=lambda: pods.summary(api, namespace, "configured"),
        )
    requests = [r["name"] for r in claim["spec"]["devices"]["requests"]]
    config = claim["status"]["allocation"]["devices"].get("config") or []
    from_class = [
        c for c in config if c.get("source") == "FromClass" and (c.get("opaque") or {}).get("driver") == p.driver
    ]
    with check("KEP-3"):
        assert [c["opaque"]["parameters"] for c in from_class] == [parameters], pods.observed(
            f"the class's configuration {parameters} for {p.driver} must be in the allocation, from the class; "
            f"it holds {config}",
            pod,
            claim,
        )
        # No requests named: the configuration applies to every request of the claim (the API's rule).
        named = from_class[0].get("requests") or requests
        assert set(named) == set(requests), pods.observed(
            f"the class's configuration must apply to the claim's requests {requests}; it names {named}",
            pod,
            claim,
        )
