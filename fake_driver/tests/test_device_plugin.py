"""Device plugin against an in-test fake kubelet, over real Unix sockets."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import grpc
import pytest

from fake_driver._gen import deviceplugin_v1beta1_pb2 as pb
from fake_driver._gen import deviceplugin_v1beta1_pb2_grpc as pb_grpc
from fake_driver.config import DriverConfig
from fake_driver.device_plugin.plugin import DevicePlugin
from fake_driver.device_plugin.service import DevicePluginService
from fake_driver.grpc_unix import channel, start_server, stop_server
from fake_driver.probe_output import parse_probe_output
from fake_driver.tests.helpers import fake_container, free_port, ready, run_probe, wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]


class FakeKubelet:
    """Serves v1beta1.Registration on kubelet.sock and records each RegisterRequest."""

    def __init__(self, socket: Path):
        self.socket = socket
        self.requests: queue.Queue[pb.RegisterRequest] = queue.Queue()
        self._server = start_server(socket, lambda s: pb_grpc.add_RegistrationServicer_to_server(self, s))

    def Register(self, request, context):
        self.requests.put(request)
        return pb.Empty()

    def next_request(self, timeout: float = 10) -> pb.RegisterRequest:
        try:
            return self.requests.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no Register call within {timeout}s") from None

    def stop(self) -> None:
        stop_server(self._server, self.socket)


@pytest.fixture
def config(make_config) -> DriverConfig:
    return make_config(FAKE_GPU_DEVICES_PER_NODE="3", FAKE_GPU_RESOURCE_NAME="example.com/gpu")


@pytest.fixture
def kubelet(config):
    fake = FakeKubelet(config.kubelet_socket)
    yield fake
    fake.stop()


@pytest.fixture
def running(config, kubelet):
    """A DevicePlugin running in a thread until the test ends."""
    plugin = DevicePlugin(config, poll_seconds=0.05)
    stop = threading.Event()
    runner = threading.Thread(target=plugin.run, args=(stop,))
    runner.start()
    yield plugin
    port = plugin.readiness.port
    stop.set()
    runner.join(timeout=20)
    assert not runner.is_alive(), "device plugin did not stop"
    assert not config.device_plugin_socket.exists()
    assert not ready(port)


def stub(config: DriverConfig):
    conn = channel(config.device_plugin_socket)
    return conn, pb_grpc.DevicePluginStub(conn)


def test_registers_with_the_kubelet(config, kubelet, running):
    request = kubelet.next_request()
    assert request.version == "v1beta1"
    assert request.endpoint == "fake-gpu-example.com_gpu.sock"
    assert (config.device_plugin_dir / request.endpoint) == config.device_plugin_socket
    assert request.resource_name == "example.com/gpu"
    assert request.options.get_preferred_allocation_available is True
    assert request.options.pre_start_required is False
    wait_for(lambda: ready(running.readiness.port), 10, "readiness after registration")


def test_list_and_watch_streams_the_same_gpus_as_dra(config, kubelet, running):
    kubelet.next_request()
    conn, plugin = stub(config)
    with conn:
        options = plugin.GetDevicePluginOptions(pb.Empty(), timeout=10)
        assert options.get_preferred_allocation_available
        stream = plugin.ListAndWatch(pb.Empty(), timeout=30)
        first = next(stream)
        stream.cancel()
    # Same node, same config: the DRA inventory has exactly these uuids.
    assert [(d.ID, d.health) for d in first.devices] == [(g.uuid, "Healthy") for g in config.inventory().gpus]


def test_allocate_follows_the_exposure_contract(config, kubelet, running, short_tmp):
    kubelet.next_request()
    gpus = config.inventory().gpus
    conn, plugin = stub(config)
    with conn:
        response = plugin.Allocate(
            pb.AllocateRequest(
                container_requests=[
                    pb.ContainerAllocateRequest(devices_ids=[gpus[2].uuid, gpus[0].uuid]),
                    pb.ContainerAllocateRequest(devices_ids=[gpus[1].uuid]),
                ]
            ),
            timeout=10,
        )
        assert (
            plugin.PreStartContainer(pb.PreStartContainerRequest(devices_ids=[gpus[0].uuid]), timeout=10)
            == pb.PreStartContainerResponse()
        )
        with pytest.raises(grpc.RpcError) as unknown:
            plugin.Allocate(
                pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=["GPU-nope"])]),
                timeout=10,
            )
        assert unknown.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    first, second = response.container_responses
    assert dict(first.envs) == {"FAKE_GPU_2": gpus[2].uuid, "FAKE_GPU_0": gpus[0].uuid}
    assert dict(second.envs) == {"FAKE_GPU_1": gpus[1].uuid}
    assert [(m.container_path, m.host_path, m.read_only) for m in first.mounts] == [
        (f"/run/fake-gpu/{g.uuid}", str(config.state_dir / "devices" / "device-plugin" / g.uuid), True)
        for g in (gpus[2], gpus[0])
    ]
    assert len(first.cdi_devices) == 0

    seen = parse_probe_output(
        run_probe(
            fake_container(short_tmp / "ctr", [(m.host_path, m.container_path) for m in first.mounts]), dict(first.envs)
        )
    )
    assert [(g.uuid, g.index, g.node, g.model, g.via, g.env) for g in seen] == sorted(
        (g.uuid, g.index, "node-a", "FAKE-GPU-80GB", "device-plugin", "ok") for g in (gpus[0], gpus[2])
    )


def test_env_names_exposure_names_the_devices_it_allocates(make_config):
    """Same GPUs, second personality: only GPU_DEVICE_<index>=<device name>, no mounts."""
    config = make_config(FAKE_GPU_EXPOSURE="env-names")
    gpus = config.inventory().gpus
    service = DevicePluginService(config.inventory(), config.state_dir, None, exposure=config.exposure)
    response = service.Allocate(
        pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=[gpus[2].uuid, gpus[0].uuid])]),
        context=None,
    )
    [entry] = response.container_responses
    assert dict(entry.envs) == {"GPU_DEVICE_2": "gpu-2", "GPU_DEVICE_0": "gpu-0"}
    assert not entry.mounts and not (config.state_dir / "devices").exists()


def test_preferred_allocation_keeps_required_then_lowest_index(config, kubelet, running):
    kubelet.next_request()
    ids = [g.uuid for g in config.inventory().gpus]
    conn, plugin = stub(config)
    with conn:
        response = plugin.GetPreferredAllocation(
            pb.PreferredAllocationRequest(
                container_requests=[
                    pb.ContainerPreferredAllocationRequest(
                        available_deviceIDs=[ids[2], ids[1], ids[0]], must_include_deviceIDs=[ids[2]], allocation_size=2
                    )
                ]
            ),
            timeout=10,
        )
    assert list(response.container_responses[0].deviceIDs) == [ids[2], ids[0]]


def test_registers_again_after_kubelet_restart(config, kubelet, running):
    kubelet.next_request()
    kubelet.stop()  # a new kubelet process recreates kubelet.sock
    restarted = FakeKubelet(config.kubelet_socket)
    try:
        assert restarted.next_request().resource_name == "example.com/gpu"
        wait_for(config.device_plugin_socket.exists, 10, "the plugin socket to be served again")
        conn, plugin = stub(config)
        with conn:
            assert plugin.GetDevicePluginOptions(pb.Empty(), timeout=10).get_preferred_allocation_available
    finally:
        restarted.stop()


def test_serves_and_registers_again_when_its_socket_is_removed(config, kubelet, running):
    kubelet.next_request()
    config.device_plugin_socket.unlink()  # what the kubelet does to plugin sockets when it starts
    assert kubelet.next_request().endpoint == config.device_plugin_socket.name
    wait_for(config.device_plugin_socket.exists, 10, "the plugin socket to be served again")


def test_cdi_mode_names_devices_from_a_static_spec(make_config):
    config = make_config(FAKE_GPU_DEVICES_PER_NODE="2", FAKE_GPU_DEVICE_PLUGIN_CDI="true")
    kubelet = FakeKubelet(config.kubelet_socket)
    plugin = DevicePlugin(config, poll_seconds=0.05)
    stop = threading.Event()
    runner = threading.Thread(target=plugin.run, args=(stop,))
    runner.start()
    try:
        kubelet.next_request()
        gpu = config.inventory().gpus[1]
        conn, stub_ = stub(config)
        with conn:
            response = stub_.Allocate(
                pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=[gpu.uuid])]), timeout=10
            )
    finally:
        stop.set()
        runner.join(timeout=20)
        kubelet.stop()
    [container] = response.container_responses
    assert [d.name for d in container.cdi_devices] == ["k8s.gpu.example.com/gpu=device-plugin-gpu-1"]
    assert dict(container.envs) == {} and len(container.mounts) == 0
    spec = json.loads((config.cdi_dir / "k8s.gpu.example.com_gpu-device-plugin.json").read_text())
    [device] = [d for d in spec["devices"] if d["name"] == "device-plugin-gpu-1"]
    assert device["containerEdits"]["env"] == [f"FAKE_GPU_1={gpu.uuid}"]
    assert Path(device["containerEdits"]["mounts"][0]["hostPath"]).read_text().endswith("driver=device-plugin\n")


def test_module_entry_point_stops_cleanly_on_sigterm(config, kubelet):
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "NODE_NAME": config.node_name,
        "FAKE_GPU_DEVICES_PER_NODE": "3",
        "FAKE_GPU_STATE_DIR": str(config.state_dir),
        "FAKE_GPU_DEVICE_PLUGIN_DIR": str(config.device_plugin_dir),
        "FAKE_GPU_READY_PORT": str(port),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "fake_driver.device_plugin"], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        assert kubelet.next_request(timeout=30).resource_name == "example.com/gpu"
        wait_for(lambda: ready(port), 10, "readiness")
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    assert "registered example.com/gpu (3 GPUs)" in stderr
    assert not config.device_plugin_socket.exists()
    assert not ready(port)


def test_module_entry_point_rejects_bad_config():
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "FAKE_GPU_PROFILE": "amd"}
    env.pop("NODE_NAME", None)
    result = subprocess.run(
        [sys.executable, "-m", "fake_driver.dra_plugin"], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "NODE_NAME is not set" in result.stderr
    assert "profile 'amd' is unknown" in result.stderr
