"""The DevicePlugin gRPC service: device list, allocation per the exposure contract."""

from __future__ import annotations

import threading
from pathlib import Path

import grpc

from fake_driver import cdi
from fake_driver._gen import deviceplugin_v1beta1_pb2 as pb
from fake_driver._gen import deviceplugin_v1beta1_pb2_grpc as pb_grpc
from fake_driver.defects import neighbour
from fake_driver.exposure import EXPOSURE_FILES, VIA_DEVICE_PLUGIN, container_edits, write_device_files
from fake_driver.inventory import Gpu, NodeInventory

HEALTHY = "Healthy"


def cdi_device_name(gpu: Gpu) -> str:
    return f"device-plugin-{gpu.name}"


def write_cdi_spec(
    kind: cdi.CdiKind, cdi_dir: Path, state_dir: Path, inventory: NodeInventory, exposure: str = EXPOSURE_FILES
) -> None:
    """One static spec for all GPUs; only used when the plugin hands out CDI device names."""
    devices = [
        cdi.CdiDevice(name=cdi_device_name(gpu), edits=container_edits(state_dir, VIA_DEVICE_PLUGIN, [gpu], exposure))
        for gpu in inventory.gpus
    ]
    cdi.write_spec(kind.spec_path(cdi_dir, "device-plugin"), cdi.spec_document(kind, devices))


class DevicePluginService:
    def __init__(
        self,
        inventory: NodeInventory,
        state_dir: Path,
        cdi_kind: cdi.CdiKind | None,
        defects: frozenset[str] = frozenset(),
        exposure: str = EXPOSURE_FILES,
    ):
        """`cdi_kind` set: Allocate names CDI devices; None: it returns env vars + mounts."""
        self._inventory = inventory
        self._state_dir = state_dir
        self._cdi_kind = cdi_kind
        self._extra_device = "device-plugin-extra-device" in defects  # self-check only
        self._first_device = "device-plugin-first-device" in defects  # self-check only
        self._exposure = exposure

    def GetDevicePluginOptions(self, request, context: grpc.ServicerContext):
        return pb.DevicePluginOptions(pre_start_required=False, get_preferred_allocation_available=True)

    def ListAndWatch(self, request, context: grpc.ServicerContext):
        # Emulated GPUs never change health, so one full list per stream is the whole story.
        yield pb.ListAndWatchResponse(devices=[pb.Device(ID=gpu.uuid, health=HEALTHY) for gpu in self._inventory.gpus])
        ended = threading.Event()
        # The callback runs when the kubelet hangs up or the server stops; False: already over.
        if context.add_callback(ended.set):
            ended.wait()

    def GetPreferredAllocation(self, request, context: grpc.ServicerContext):
        """Required IDs first, then the lowest GPU indexes: deterministic for tests."""
        response = pb.PreferredAllocationResponse()
        for container in request.container_requests:
            chosen = list(dict.fromkeys(container.must_include_deviceIDs))
            rest = sorted(set(container.available_deviceIDs) - set(chosen), key=self._index_of)
            chosen += rest[: max(container.allocation_size - len(chosen), 0)]
            response.container_responses.add(deviceIDs=chosen)
        return response

    def Allocate(self, request, context: grpc.ServicerContext):
        response = pb.AllocateResponse()
        for container in request.container_requests:
            gpus = [self._gpu(device_id, context) for device_id in container.devices_ids]
            if self._first_device:  # whatever the kubelet chose: the node's first GPUs, double booked
                gpus = list(self._inventory.gpus[: len(gpus)])
            if self._extra_device and gpus:
                gpus.append(neighbour(self._inventory.gpus, gpus[-1]))
            # Recreate host files a node cleanup may have removed; the runtime binds them next.
            if self._exposure == EXPOSURE_FILES:
                write_device_files(self._state_dir, self._inventory.node_name, VIA_DEVICE_PLUGIN, gpus)
            entry = response.container_responses.add()
            if self._cdi_kind is not None:
                entry.cdi_devices.extend(pb.CDIDevice(name=self._cdi_kind.device_id(cdi_device_name(g))) for g in gpus)
            else:
                edits = container_edits(self._state_dir, VIA_DEVICE_PLUGIN, gpus, self._exposure)
                entry.envs.update(edits.env)
                entry.mounts.extend(
                    pb.Mount(container_path=m.container_path, host_path=m.host_path, read_only=True)
                    for m in edits.mounts
                )
        return response

    def PreStartContainer(self, request, context: grpc.ServicerContext):
        return pb.PreStartContainerResponse()

    def _gpu(self, device_id: str, context: grpc.ServicerContext) -> Gpu:
        gpu = self._inventory.by_uuid(device_id)
        if gpu is None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"unknown device ID {device_id!r}")
        return gpu

    def _index_of(self, device_id: str) -> tuple[int, str]:
        gpu = self._inventory.by_uuid(device_id)
        return (gpu.index if gpu else len(self._inventory.gpus), device_id)


def add_device_plugin_service(server: grpc.Server, service: DevicePluginService) -> None:
    pb_grpc.add_DevicePluginServicer_to_server(service, server)
