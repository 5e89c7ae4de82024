"""The plugin side of kubelet plugin discovery (socket in plugins_registry)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Sequence

import grpc

from fake_driver._gen import pluginregistration_pb2, pluginregistration_pb2_grpc
from fake_driver.grpc_unix import channel

log = logging.getLogger(__name__)


class RegistrationService:
    def __init__(
        self,
        plugin_type: str,
        name: str,
        endpoint: str,
        versions: Sequence[str],
        on_status: Callable[[bool, str], None],
    ):
        self._info = pluginregistration_pb2.PluginInfo(
            type=plugin_type, name=name, endpoint=endpoint, supported_versions=list(versions)
        )
        self._on_status = on_status

    def GetInfo(self, request, context: grpc.ServicerContext):
        return self._info

    def NotifyRegistrationStatus(self, request, context: grpc.ServicerContext):
        if request.plugin_registered:
            log.info("kubelet registered plugin %s", self._info.name)
        else:
            log.error("kubelet rejected plugin %s: %s", self._info.name, request.error)
        self._on_status(request.plugin_registered, request.error)
        return pluginregistration_pb2.RegistrationStatusResponse()


def add_registration_service(server: grpc.Server, service: RegistrationService) -> None:
    pluginregistration_pb2_grpc.add_RegistrationServicer_to_server(service, server)


def live_peers(registry_dir: Path, own_socket: Path, driver_name: str, timeout: float = 2.0) -> list[Path]:
    """Registration sockets of other running instances of the driver on this node, e.g. the
    new pod of a rolling update; stale sockets of dead pods do not answer and are left out."""
    peers = []
    for path in sorted(registry_dir.glob("*-reg.sock")):
        if path == own_socket:
            continue
        try:
            with channel(path) as conn:
                info = pluginregistration_pb2_grpc.RegistrationStub(conn).GetInfo(
                    pluginregistration_pb2.InfoRequest(), timeout=timeout
                )
        except (grpc.RpcError, ValueError):
            continue
        if info.name == driver_name:
            peers.append(path)
    return peers
