"""Setting a control-plane component's flags (no cluster)."""

from __future__ import annotations

from clusters.control_plane import with_flags


def test_a_flag_present_is_replaced_and_a_new_one_added() -> None:
    command = ["kube-controller-manager", "--kube-api-qps=20", "--leader-elect=true"]
    assert with_flags(command, {"kube-api-qps": "1000", "kube-api-burst": "1000"}) == [
        "kube-controller-manager",
        "--leader-elect=true",
        "--kube-api-qps=1000",
        "--kube-api-burst=1000",
    ]


def test_a_flag_whose_name_merely_starts_alike_is_kept() -> None:
    assert with_flags(["x", "--kube-api-qps-extra=1"], {"kube-api-qps": "5"}) == [
        "x",
        "--kube-api-qps-extra=1",
        "--kube-api-qps=5",
    ]
