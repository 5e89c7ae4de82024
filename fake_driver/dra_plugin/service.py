"""The DRAPlugin gRPC service, served in both API versions the kubelet may pick."""

from __future__ import annotations

import logging
from types import ModuleType
from typing import Callable

import grpc

from fake_driver._gen import dra_v1_pb2, dra_v1_pb2_grpc, dra_v1beta1_pb2, dra_v1beta1_pb2_grpc
from fake_driver.dra_plugin.preparer import ClaimPreparer, ClaimRef, PrepareResult

log = logging.getLogger(__name__)

# Advertised in PluginInfo.supported_versions as "<short package>.<service>".
SUPPORTED_SERVICES = ("v1.DRAPlugin", "v1beta1.DRAPlugin")


class DraService:
    """One implementation for both versions: their messages differ only in v1's optional
    Device.share_id, which this driver never sets. `messages` is the version's *_pb2 module."""

    def __init__(self, preparer: ClaimPreparer, messages: ModuleType):
        self._preparer = preparer
        self._messages = messages

    def NodePrepareResources(self, request, context: grpc.ServicerContext):
        response = self._messages.NodePrepareResourcesResponse()
        for claim in request.claims:
            result = self._guarded(self._preparer.prepare, claim)
            entry = response.claims[claim.uid]  # indexing a message map inserts the entry
            entry.error = result.error
            for device in result.devices:
                entry.devices.add(
                    request_names=device.request_names,
                    pool_name=device.pool,
                    device_name=device.device,
                    cdi_device_ids=device.cdi_device_ids,
                )
        return response

    def NodeUnprepareResources(self, request, context: grpc.ServicerContext):
        response = self._messages.NodeUnprepareResourcesResponse()
        for claim in request.claims:
            response.claims[claim.uid].error = self._guarded(self._unprepare, claim).error
        return response

    def _unprepare(self, ref: ClaimRef) -> PrepareResult:
        self._preparer.unprepare(ref)
        return PrepareResult()

    @staticmethod
    def _guarded(call: Callable[[ClaimRef], PrepareResult], claim) -> PrepareResult:
        """Per-claim failures (API down, disk full) become that claim's error so the kubelet
        retries just it, instead of failing the whole RPC."""
        ref = ClaimRef(namespace=claim.namespace, uid=claim.uid, name=claim.name)
        try:
            return call(ref)
        except Exception as exc:  # noqa: BLE001 - reported to the kubelet, which retries
            log.exception("claim %s/%s (%s) failed", ref.namespace, ref.name, ref.uid)
            return PrepareResult(error=f"claim {ref.namespace}/{ref.name} ({ref.uid}): {exc}")


def add_dra_services(server: grpc.Server, preparer: ClaimPreparer) -> None:
    dra_v1_pb2_grpc.add_DRAPluginServicer_to_server(DraService(preparer, dra_v1_pb2), server)
    dra_v1beta1_pb2_grpc.add_DRAPluginServicer_to_server(DraService(preparer, dra_v1beta1_pb2), server)
