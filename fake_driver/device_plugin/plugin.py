"""Runs the device plugin: serve, register with the kubelet, re-register after kubelet restarts."""

from __future__ import annotations

import logging
import os
import threading

import grpc

from fake_driver._gen import deviceplugin_v1beta1_pb2 as pb
from fake_driver._gen import deviceplugin_v1beta1_pb2_grpc as pb_grpc
from fake_driver.config import DriverConfig
from fake_driver.device_plugin.service import DevicePluginService, add_device_plugin_service, write_cdi_spec
from fake_driver.exposure import EXPOSURE_FILES, VIA_DEVICE_PLUGIN, write_device_files
from fake_driver.grpc_unix import channel, start_server, stop_server
from fake_driver.runtime import Readiness

log = logging.getLogger(__name__)
API_VERSION = "v1beta1"

SocketIdentity = tuple[int, int]  # (inode, ctime): changes when the kubelet recreates its socket


def socket_identity(path: os.PathLike) -> SocketIdentity | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_ctime_ns)


class DevicePlugin:
    def __init__(self, config: DriverConfig, poll_seconds: float = 1.0, register_timeout: float = 5.0):
        self.config = config
        self.inventory = config.inventory()
        self._poll_seconds = poll_seconds
        self._register_timeout = register_timeout
        self.readiness = Readiness(config.ready_port)
        cdi_kind = config.cdi_kind if config.device_plugin_cdi else None
        self.service = DevicePluginService(self.inventory, config.state_dir, cdi_kind, config.defects, config.exposure)

    def run(self, stop: threading.Event) -> None:
        cfg = self.config
        if cfg.exposure == EXPOSURE_FILES:
            write_device_files(cfg.state_dir, cfg.node_name, VIA_DEVICE_PLUGIN, self.inventory.gpus)
        if cfg.device_plugin_cdi:
            write_cdi_spec(cfg.cdi_kind, cfg.cdi_dir, cfg.state_dir, self.inventory, cfg.exposure)
        self.readiness.serve()
        try:
            # Each pass is one kubelet lifetime: the kubelet wipes plugin sockets when it restarts,
            # so the server is rebuilt on a fresh socket and registered again.
            while not stop.is_set():
                server = start_server(cfg.device_plugin_socket, lambda s: add_device_plugin_service(s, self.service))
                try:
                    kubelet = self._register(stop)
                    if kubelet is not None:
                        self.readiness.set(True)
                        self._wait_for_kubelet_restart(kubelet, stop)
                finally:
                    self.readiness.clear()
                    stop_server(server, cfg.device_plugin_socket)
        finally:
            self.readiness.close()
        log.info("stopped")

    def _register(self, stop: threading.Event) -> SocketIdentity | None:
        """Register until the kubelet accepts; returns the identity of the kubelet socket
        registered with, or None when stopped first."""
        cfg = self.config
        request = pb.RegisterRequest(
            version=API_VERSION,
            endpoint=cfg.device_plugin_socket.name,
            resource_name=cfg.resource_name,
            options=pb.DevicePluginOptions(pre_start_required=False, get_preferred_allocation_available=True),
        )
        while True:
            kubelet = socket_identity(cfg.kubelet_socket)
            if kubelet is not None:
                try:
                    with channel(cfg.kubelet_socket) as kubelet_channel:
                        pb_grpc.RegistrationStub(kubelet_channel).Register(request, timeout=self._register_timeout)
                    log.info(
                        "registered %s (%d GPUs) with the kubelet as %s",
                        cfg.resource_name,
                        len(self.inventory.gpus),
                        request.endpoint,
                    )
                    return kubelet
                except grpc.RpcError as exc:
                    log.warning("registering with %s failed: %s", cfg.kubelet_socket, exc)
            if stop.wait(self._poll_seconds):
                return None

    def _wait_for_kubelet_restart(self, kubelet: SocketIdentity, stop: threading.Event) -> None:
        cfg = self.config
        while not stop.wait(self._poll_seconds):
            if socket_identity(cfg.kubelet_socket) != kubelet:
                log.info("kubelet socket was recreated; registering again")
                return
            if not cfg.device_plugin_socket.exists():
                log.info("plugin socket was removed; serving and registering again")
                return
