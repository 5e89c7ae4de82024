"""DRA plugin over real Unix sockets: registration, prepare/unprepare in both API versions,
idempotence, checkpoint reload, CDI spec contents, shutdown."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import pytest

from fake_driver._gen import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
    pluginregistration_pb2,
    pluginregistration_pb2_grpc,
)
from fake_driver.dra_plugin.checkpoint import Checkpoint
from fake_driver.dra_plugin.plugin import DraPlugin
from fake_driver.dra_plugin.registration import live_peers
from fake_driver.grpc_unix import channel
from fake_driver.probe_output import parse_probe_output
from fake_driver.tests.helpers import FakeKubeApi, allocated_claim, fake_container, ready, run_probe, wait_for

DRIVER = "gpu.example.com"
NODE = "node-a"
UID = "0b1c2d3e-0000-4000-8000-000000000001"
VERSIONS = [(dra_v1_pb2, dra_v1_pb2_grpc), (dra_v1beta1_pb2, dra_v1beta1_pb2_grpc)]


@pytest.fixture
def api() -> FakeKubeApi:
    fake = FakeKubeApi()
    fake.add_claim(
        allocated_claim(
            "ns1",
            "pod-extended-resources-abcde",
            UID,
            [
                ("container-0-request-0", DRIVER, NODE, "gpu-1"),
                ("container-0-request-0", DRIVER, NODE, "gpu-3"),
                ("other-request", "other.example.com", NODE, "nic-0"),  # another driver's device: not ours
            ],
        )
    )
    return fake


@pytest.fixture
def plugin(make_config, api):
    started = DraPlugin(make_config(FAKE_GPU_DEVICES_PER_NODE="4"), api, resync_seconds=3600)
    started.start()
    yield started
    started.shutdown()


def prepare(plugin: DraPlugin, version, uid=UID, name="pod-extended-resources-abcde", namespace="ns1"):
    pb, pb_grpc = version
    with channel(plugin.config.dra_socket) as conn:
        request = pb.NodePrepareResourcesRequest(claims=[pb.Claim(namespace=namespace, uid=uid, name=name)])
        return pb_grpc.DRAPluginStub(conn).NodePrepareResources(request, timeout=10)


def unprepare(plugin: DraPlugin, version, uid=UID):
    pb, pb_grpc = version
    with channel(plugin.config.dra_socket) as conn:
        request = pb.NodeUnprepareResourcesRequest(claims=[pb.Claim(namespace="ns1", uid=uid, name="x")])
        return pb_grpc.DRAPluginStub(conn).NodeUnprepareResources(request, timeout=10)


def test_registration_get_info_and_readiness(plugin):
    with channel(plugin.config.registration_socket) as conn:
        stub = pluginregistration_pb2_grpc.RegistrationStub(conn)
        info = stub.GetInfo(pluginregistration_pb2.InfoRequest(), timeout=10)
        assert info.type == "DRAPlugin"
        assert info.name == DRIVER
        assert info.endpoint == str(plugin.config.dra_socket)
        assert list(info.supported_versions) == ["v1.DRAPlugin", "v1beta1.DRAPlugin"]
        assert plugin.config.registration_socket.name == f"{DRIVER}-reg.sock"

        plugin.publish_once()
        port = plugin.readiness.port
        assert not ready(port), "ready before the kubelet accepted the plugin"
        stub.NotifyRegistrationStatus(pluginregistration_pb2.RegistrationStatus(plugin_registered=True), timeout=10)
        assert ready(port)
        stub.NotifyRegistrationStatus(
            pluginregistration_pb2.RegistrationStatus(plugin_registered=False, error="boom"), timeout=10
        )
        assert not ready(port)


@pytest.mark.parametrize("version", VERSIONS, ids=["v1", "v1beta1"])
def test_prepare_returns_our_devices_with_cdi_ids(plugin, version):
    response = prepare(plugin, version)
    assert set(response.claims) == {UID}
    result = response.claims[UID]
    assert result.error == ""
    kind = "k8s.gpu.example.com/gpu"
    assert [(list(d.request_names), d.pool_name, d.device_name, list(d.cdi_device_ids)) for d in result.devices] == [
        (["container-0-request-0"], NODE, "gpu-1", [f"{kind}={UID}-gpu-1"]),
        (["container-0-request-0"], NODE, "gpu-3", [f"{kind}={UID}-gpu-3"]),
    ]


def test_cdi_spec_is_valid_and_follows_the_exposure_contract(plugin, short_tmp):
    prepare(plugin, VERSIONS[0])
    spec_path = plugin.config.cdi_dir / f"k8s.{DRIVER}_gpu-{UID}.json"
    spec = json.loads(spec_path.read_text())
    assert spec["cdiVersion"] == "0.6.0"
    assert spec["kind"] == "k8s.gpu.example.com/gpu"
    assert re.fullmatch(r"[a-z0-9][a-z0-9.-]*[a-z0-9]/[a-z0-9][a-z0-9_.-]*", spec["kind"])
    inventory = {g.name: g for g in plugin.inventory.gpus}
    assert [d["name"] for d in spec["devices"]] == [f"{UID}-gpu-1", f"{UID}-gpu-3"]
    mounts = []
    for device in spec["devices"]:
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:-]*", device["name"])
        gpu = inventory[device["name"].removeprefix(f"{UID}-")]
        edits = device["containerEdits"]
        assert edits["env"] == [f"FAKE_GPU_{gpu.index}={gpu.uuid}"]
        [mount] = edits["mounts"]
        assert mount["containerPath"] == f"/run/fake-gpu/{gpu.uuid}"
        assert mount["hostPath"] == str(plugin.config.state_dir / "devices" / "dra" / gpu.uuid)
        assert {"ro", "bind"} <= set(mount["options"])
        assert Path(mount["hostPath"]).read_text() == (
            f"uuid={gpu.uuid} index={gpu.index} node={NODE} model=FAKE-GPU-80GB driver=dra\n"
        )
        mounts.append((mount["hostPath"], mount["containerPath"]))

    # What a container built from this spec sees, read back by the probe and the parser.
    env = dict(e.split("=", 1) for d in spec["devices"] for e in d["containerEdits"]["env"])
    seen = parse_probe_output(run_probe(fake_container(short_tmp / "ctr", mounts), env))
    assert [(g.uuid, g.index, g.node, g.via, g.env) for g in seen] == sorted(
        (inventory[n].uuid, inventory[n].index, NODE, "dra", "ok") for n in ("gpu-1", "gpu-3")
    )


def test_prepare_is_idempotent_and_survives_restart(make_config, api):
    config = make_config(FAKE_GPU_DEVICES_PER_NODE="4")
    first = DraPlugin(config, api, resync_seconds=3600)
    first.start()
    try:
        one = prepare(first, VERSIONS[0])
        two = prepare(first, VERSIONS[1])
    finally:
        first.shutdown()
    assert [d.device_name for d in one.claims[UID].devices] == [d.device_name for d in two.claims[UID].devices]
    assert api.calls.count("get_resource_claim ns1/pod-extended-resources-abcde") == 1, api.calls
    checkpoint = json.loads(config.checkpoint_path.read_text())
    assert checkpoint["claims"][UID]["allocations"] == [
        {"request": "container-0-request-0", "device": "gpu-1"},
        {"request": "container-0-request-0", "device": "gpu-3"},
    ]

    # A restarted plugin answers from its checkpoint even when the API cannot serve the claim.
    api.claims.clear()
    spec_path = config.cdi_dir / f"k8s.{DRIVER}_gpu-{UID}.json"
    spec_path.unlink()
    second = DraPlugin(config, api, resync_seconds=3600)
    second.start()
    try:
        again = prepare(second, VERSIONS[0])
        assert again.claims[UID].error == ""
        assert list(again.claims[UID].devices) == list(one.claims[UID].devices)
        assert spec_path.exists(), "prepare must rewrite a lost CDI spec"

        for _ in range(2):  # unprepare is idempotent too
            response = unprepare(second, VERSIONS[1])
            assert set(response.claims) == {UID} and response.claims[UID].error == ""
        assert not spec_path.exists()
        assert json.loads(config.checkpoint_path.read_text())["claims"] == {}
    finally:
        second.shutdown()


def test_corrupt_checkpoint_is_set_aside(tmp_path):
    path = tmp_path / "checkpoint.json"
    path.write_text("{not json")
    assert Checkpoint(path).claims == {}
    assert not path.exists()
    assert path.with_name("checkpoint.json.corrupt").read_text() == "{not json"


def checkpointed_uids(plugin: DraPlugin) -> set[str]:
    path = plugin.config.checkpoint_path
    return set(json.loads(path.read_text())["claims"]) if path.exists() else set()


@pytest.mark.parametrize(
    "claim,name,expected",
    [
        (None, "missing", "ResourceClaim not found"),
        (allocated_claim("ns1", "reused", "another-uid", []), "reused", "has UID another-uid, the kubelet asked for"),
        ({"metadata": {"namespace": "ns1", "name": "pending", "uid": UID}, "status": {}}, "pending", "not allocated"),
        (
            allocated_claim("ns1", "elsewhere", UID, [("r", DRIVER, "node-b", "gpu-0")]),
            "elsewhere",
            "device gpu-0 is in pool node-b, not in this node's pool node-a",
        ),
        (
            allocated_claim("ns1", "unknown", UID, [("r", DRIVER, NODE, "gpu-9")]),
            "unknown",
            "device gpu-9 is not one of this node's GPUs",
        ),
    ],
)
def test_prepare_errors_are_per_claim(plugin, api, claim, name, expected):
    if claim:
        api.add_claim(claim)
    response = prepare(plugin, VERSIONS[0], name=name)
    assert set(response.claims) == {UID}
    assert expected in response.claims[UID].error
    assert f"ns1/{name}" in response.claims[UID].error
    assert len(response.claims[UID].devices) == 0
    assert UID not in checkpointed_uids(plugin)  # a failure is retried, never remembered


def test_api_failure_is_a_claim_error_not_an_rpc_error(plugin, api, monkeypatch):
    def unreachable(namespace: str, name: str):
        raise ConnectionError("apiserver unreachable")

    monkeypatch.setattr(api, "get_resource_claim", unreachable)
    result = prepare(plugin, VERSIONS[1]).claims[UID]
    assert "apiserver unreachable" in result.error and len(result.devices) == 0


def test_claim_without_our_devices_prepares_nothing(plugin, api):
    api.add_claim(allocated_claim("ns1", "foreign", UID, [("r", "other.example.com", NODE, "x")]))
    result = prepare(plugin, VERSIONS[0], name="foreign").claims[UID]
    assert result.error == "" and len(result.devices) == 0
    assert not list(plugin.config.cdi_dir.glob("*.json"))


def test_run_publishes_then_cleans_up_on_stop(make_config, api):
    config = make_config(FAKE_GPU_DEVICES_PER_NODE="2")
    plugin = DraPlugin(config, api, resync_seconds=0.05)
    stop = threading.Event()
    runner = threading.Thread(target=plugin.run, args=(stop,))
    runner.start()
    try:
        wait_for(lambda: api.slices, 10, "the ResourceSlice")
        wait_for(config.registration_socket.exists, 10, "the registration socket")
        port = plugin.readiness.port
        # Someone (the kubelet after a restart) wipes the slice: the resync loop restores it.
        api.slices.clear()
        wait_for(lambda: api.slices, 10, "the ResourceSlice to be recreated")
    finally:
        stop.set()
        runner.join(timeout=20)
    assert not runner.is_alive()
    assert api.slices == {}
    assert not config.registration_socket.exists()
    assert not config.dra_socket.exists()
    assert not ready(port), "the readiness endpoint still answers after the stop"


def test_api_server_unreachable_at_start_is_retried_without_restarting(make_config, api, monkeypatch):
    """No crash loop (which would drop what is prepared): the plugin serves its sockets, reports
    not ready, and publishes once the API server answers."""
    config = make_config(FAKE_GPU_DEVICES_PER_NODE="2")
    answering = threading.Event()
    listed = api.list_resource_slices

    def list_when_answering(driver: str, node_name: str):
        if not answering.is_set():
            raise ConnectionError("apiserver unreachable")
        return listed(driver, node_name)

    monkeypatch.setattr(api, "list_resource_slices", list_when_answering)
    plugin = DraPlugin(config, api, resync_seconds=0.05)
    stop = threading.Event()
    runner = threading.Thread(target=plugin.run, args=(stop,))
    runner.start()
    try:
        wait_for(config.dra_socket.exists, 10, "the DRA socket while the API server is away")
        time.sleep(0.3)  # several resyncs fail meanwhile
        assert runner.is_alive() and not api.slices and not ready(plugin.readiness.port)
        answering.set()
        wait_for(lambda: api.slices, 10, "the ResourceSlice once the API server answers")
    finally:
        stop.set()
        runner.join(timeout=20)
    assert not runner.is_alive()


def test_slices_are_kept_on_exit_when_configured(make_config, api):
    plugin = DraPlugin(make_config(FAKE_GPU_DELETE_SLICES_ON_EXIT="false"), api, resync_seconds=3600)
    plugin.start()
    plugin.publish_once()
    plugin.shutdown()
    assert len(api.slices) == 1


def test_rolling_update_instances_have_own_sockets_and_last_one_deletes_slices(make_config, api):
    """Two pods of a rolling update on one node: the old one stops while the new one serves."""
    old = DraPlugin(make_config(FAKE_GPU_POD_UID="uid-old"), api, resync_seconds=3600)
    new = DraPlugin(make_config(FAKE_GPU_POD_UID="uid-new"), api, resync_seconds=3600)
    assert old.config.registration_socket.name == f"{DRIVER}-uid-old-reg.sock"
    assert old.config.dra_socket.name == "dra-uid-old.sock" != new.config.dra_socket.name
    old.start()
    old.publish_once()
    new.start()
    new.publish_once()
    old.shutdown()
    assert len(api.slices) == 1, "the old instance must leave the slices to the new one"
    assert new.config.registration_socket.exists() and new.config.dra_socket.exists()
    new.shutdown()
    assert api.slices == {}, "the last instance deletes the slices"


def test_stale_or_foreign_registration_sockets_are_not_peers(make_config, api):
    config = make_config(FAKE_GPU_POD_UID="uid-a")
    config.plugin_registry_dir.mkdir(parents=True, exist_ok=True)
    (config.plugin_registry_dir / f"{DRIVER}-uid-dead-reg.sock").touch()  # left by a killed pod
    other = DraPlugin(
        make_config(FAKE_GPU_POD_UID="uid-b", FAKE_GPU_DRIVER_NAME="other.example.com"), api, resync_seconds=3600
    )
    other.start()
    try:
        assert live_peers(config.plugin_registry_dir, config.registration_socket, DRIVER) == []
        assert live_peers(config.plugin_registry_dir, config.registration_socket, "other.example.com") == [
            other.config.registration_socket
        ]
    finally:
        other.shutdown()


def test_long_registration_socket_names_are_hashed(make_config):
    config = make_config(
        FAKE_GPU_POD_UID="0b1c2d3e-0000-4000-8000-000000000001",
        FAKE_GPU_DRIVER_NAME="a-very-long-driver-name.with-many-labels.gpu.example.com",
    )
    socket = config.registration_socket
    assert len(str(socket).encode()) <= 107 and socket.name.endswith("-reg.sock")
    assert config.pod_uid not in socket.name, "the long name should have been replaced by its hash"


def test_env_names_exposure_tells_device_names_and_mounts_nothing(make_config, api):
    """The second personality: environment variables only, naming each device by its slice name."""
    named = DraPlugin(
        make_config(FAKE_GPU_DEVICES_PER_NODE="4", FAKE_GPU_EXPOSURE="env-names"), api, resync_seconds=3600
    )
    named.start()
    try:
        assert prepare(named, VERSIONS[0]).claims[UID].error == ""
        spec = json.loads((named.config.cdi_dir / f"k8s.{DRIVER}_gpu-{UID}.json").read_text())
        edits = [d["containerEdits"] for d in spec["devices"]]
        assert [e["env"] for e in edits] == [["GPU_DEVICE_1=gpu-1"], ["GPU_DEVICE_3=gpu-3"]]
        assert not any(e.get("mounts") for e in edits)
        assert not (named.config.state_dir / "devices").exists()
    finally:
        named.shutdown()


def _probe_prepared(plugin: DraPlugin, root: Path) -> list[tuple[str, str]]:
    """(uuid, env state) per device a container built from the claim's CDI spec sees."""
    spec = json.loads((plugin.config.cdi_dir / f"k8s.{DRIVER}_gpu-{UID}.json").read_text())
    mounts = [(m["hostPath"], m["containerPath"]) for d in spec["devices"] for m in d["containerEdits"]["mounts"]]
    env = dict(e.split("=", 1) for d in spec["devices"] for e in d["containerEdits"]["env"])
    return [(g.uuid, g.env) for g in parse_probe_output(run_probe(fake_container(root, mounts), env))]


@pytest.mark.parametrize(
    "defect, shown, env",
    [
        ("", ["gpu-1", "gpu-3"], "ok"),
        ("env-names-other-gpu", ["gpu-1", "gpu-3"], "wrong"),
        ("prepare-next-device", ["gpu-2", "gpu-0"], "ok"),
        ("extra-device", ["gpu-1", "gpu-3", "gpu-0"], "ok"),
    ],
)
def test_exposure_defects_change_what_containers_see(make_config, api, short_tmp, defect, shown, env):
    broken = DraPlugin(make_config(FAKE_GPU_DEVICES_PER_NODE="4", FAKE_GPU_DEFECTS=defect), api, resync_seconds=3600)
    broken.start()
    try:
        assert prepare(broken, VERSIONS[0]).claims[UID].error == ""
        uuids = {g.name: g.uuid for g in broken.inventory.gpus}
        assert sorted(_probe_prepared(broken, short_tmp / "ctr")) == sorted((uuids[n], env) for n in shown)
    finally:
        broken.shutdown()


def test_lifecycle_defects(make_config, api):
    keeps = DraPlugin(
        make_config(FAKE_GPU_DEVICES_PER_NODE="4", FAKE_GPU_DEFECTS="no-unprepare"), api, resync_seconds=3600
    )
    keeps.start()
    try:
        prepare(keeps, VERSIONS[0])
        unprepare(keeps, VERSIONS[0])
        assert keeps.preparer.spec_path(UID).exists() and UID in Checkpoint(keeps.config.checkpoint_path).claims
    finally:
        keeps.shutdown()
    refuses = DraPlugin(
        make_config(FAKE_GPU_DEVICES_PER_NODE="4", FAKE_GPU_DEFECTS="fail-multi-device-prepare"),
        api,
        resync_seconds=3600,
    )
    refuses.start()
    try:
        assert "fail-multi-device-prepare" in prepare(refuses, VERSIONS[0]).claims[UID].error
    finally:
        refuses.shutdown()


def test_a_driver_that_forgets_on_restart_leaks_only_what_its_predecessor_prepared(make_config, api):
    config = make_config(FAKE_GPU_DEVICES_PER_NODE="4", FAKE_GPU_DEFECTS="forgets-prepared-on-restart")
    first = DraPlugin(config, api, resync_seconds=3600)
    first.start()
    try:
        prepare(first, VERSIONS[0])
    finally:
        first.shutdown()
    second = DraPlugin(config, api, resync_seconds=3600)  # the same node, a new process
    second.start()
    try:
        unprepare(second, VERSIONS[0])
        assert second.preparer.spec_path(UID).exists() and UID in Checkpoint(second.config.checkpoint_path).claims
        prepare(second, VERSIONS[0])  # prepared by this process: released as it should be
        unprepare(second, VERSIONS[0])
        assert not second.preparer.spec_path(UID).exists()
    finally:
        second.shutdown()
