"""The plugin side of kubelet plugin discovery (socket in plugins_registry)."""

from __future__ import annotations

import logging
from typing import Callable, Sequence

import grpc

from fake_driver._gen import pluginregistration_pb2, pluginregistration_pb2_grpc

log = logging.getLogger(__name__)


class RegistrationService:
    def __init__(self, plugin_type: str, name: str, endpoint: str, versions: Sequence[str],
                 on_status: Callable[[bool, str], None]):
        self._info = pluginregistration_pb2.PluginInfo(
            type=plugin_type, name=name, endpoint=endpoint, supported_versions=list(versions))
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
