"""`python -m fake_driver.dra_plugin` end to end: KUBECONFIG to a fake API server, a fake
kubelet doing plugin discovery, readiness, SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from fake_driver._gen import dra_v1_pb2, dra_v1_pb2_grpc, pluginregistration_pb2, pluginregistration_pb2_grpc
from fake_driver.grpc_unix import channel
from fake_driver.tests.fake_apiserver import FakeApiServer
from fake_driver.tests.helpers import allocated_claim, free_port, ready, wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_dra_plugin_process(make_config, short_tmp):
    config = make_config(FAKE_GPU_DEVICES_PER_NODE="2")
    server = FakeApiServer()
    port = free_port()
    server.claims[("ns1", "c1")] = allocated_claim(
        "ns1", "c1", "uid-1", [("r0", config.driver_name, "node-a", "gpu-1")]
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "KUBECONFIG": str(server.write_kubeconfig(short_tmp / "kubeconfig")),
        "NODE_NAME": "node-a",
        "FAKE_GPU_DEVICES_PER_NODE": "2",
        **{
            key: str(value)
            for key, value in {
                "FAKE_GPU_STATE_DIR": config.state_dir,
                "FAKE_GPU_CDI_DIR": config.cdi_dir,
                "FAKE_GPU_PLUGIN_REGISTRY_DIR": config.plugin_registry_dir,
                "FAKE_GPU_PLUGIN_DATA_DIR": config.plugin_data_dir,
                "FAKE_GPU_READY_PORT": port,
            }.items()
        },
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "fake_driver.dra_plugin"], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for(lambda: server.slices, 30, "the ResourceSlice")
        [published] = server.slices.values()
        assert published["spec"]["nodeName"] == "node-a"
        assert [d["name"] for d in published["spec"]["devices"]] == ["gpu-0", "gpu-1"]

        # What the kubelet's plugin watcher does with a new registration socket.
        wait_for(config.registration_socket.exists, 30, "the registration socket")
        with channel(config.registration_socket) as conn:
            registration = pluginregistration_pb2_grpc.RegistrationStub(conn)
            info = registration.GetInfo(pluginregistration_pb2.InfoRequest(), timeout=10)
            registration.NotifyRegistrationStatus(
                pluginregistration_pb2.RegistrationStatus(plugin_registered=True), timeout=10
            )
        wait_for(lambda: ready(port), 30, "readiness")

        with channel(Path(info.endpoint)) as conn:
            response = dra_v1_pb2_grpc.DRAPluginStub(conn).NodePrepareResources(
                dra_v1_pb2.NodePrepareResourcesRequest(
                    claims=[dra_v1_pb2.Claim(namespace="ns1", uid="uid-1", name="c1")]
                ),
                timeout=10,
            )
        assert [d.cdi_device_ids[0] for d in response.claims["uid-1"].devices] == [
            "k8s.gpu.example.com/gpu=uid-1-gpu-1"
        ]

        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        server.stop()
    assert process.returncode == 0, stderr
    assert server.slices == {}, "slices are deleted on SIGTERM by default"
    assert not config.registration_socket.exists() and not config.dra_socket.exists()
    assert not ready(port)
