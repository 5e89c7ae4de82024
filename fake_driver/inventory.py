"""The emulated GPUs of one node.

Identity is derived only from (profile, node name, index), so the DRA plugin and the device
plugin on the same node describe the same physical GPUs, and a restarted plugin sees the
same devices as before. That shared identity is what lets the suite spot double booking.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

# Fixed namespace for uuid5: changing it would change every emulated GPU's identity.
_UUID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_DNS, "fake-gpu.kep5004.io")


@dataclass(frozen=True)
class Version:
    """A semantic-version attribute value (ResourceSlice `version` attribute type)."""

    value: str


AttributeValue = bool | int | str | Version


@dataclass(frozen=True)
class Gpu:
    name: str  # device name in the ResourceSlice, e.g. "gpu-0"
    index: int
    uuid: str  # the identity used everywhere: attribute, device plugin ID, exposure file name
    model: str
    attributes: Mapping[str, AttributeValue]
    capacity: Mapping[str, str]  # resource.Quantity strings


@dataclass(frozen=True)
class DeviceProfile:
    name: str
    default_driver_name: str
    default_resource_name: str
    uuid_prefix: str
    model: str
    model_attribute: str  # attribute that carries the model, named as the vendor names it
    memory: str
    constant_attributes: Mapping[str, AttributeValue] = field(default_factory=dict)

    def attributes_for(self, index: int, gpu_uuid: str) -> dict[str, AttributeValue]:
        return {
            "type": "gpu",
            "uuid": gpu_uuid,
            "index": index,
            self.model_attribute: self.model,
            **self.constant_attributes,
        }


# Model names contain no whitespace: they travel as one token in the exposure file and probe.
PROFILES: Mapping[str, DeviceProfile] = MappingProxyType(
    {
        "generic": DeviceProfile(
            name="generic",
            default_driver_name="gpu.example.com",
            default_resource_name="example.com/gpu",
            uuid_prefix="gpu-",
            model="FAKE-GPU-80GB",
            model_attribute="model",
            memory="80Gi",
            constant_attributes={"driverVersion": Version("1.0.0")},
        ),
        # Mimics the NVIDIA DRA driver's naming so vendor-style DeviceClasses
        # (e.g. `device.attributes['gpu.nvidia.com'].type == 'gpu'`) select these devices.
        "nvidia": DeviceProfile(
            name="nvidia",
            default_driver_name="gpu.nvidia.com",
            default_resource_name="nvidia.com/gpu",
            uuid_prefix="GPU-",
            model="NVIDIA-FAKE-H100-80GB",
            model_attribute="productName",
            memory="80Gi",
            constant_attributes={
                "brand": "Nvidia",
                "architecture": "Hopper",
                "cudaComputeCapability": Version("9.0.0"),
                "cudaDriverVersion": Version("12.8.0"),
                "driverVersion": Version("570.124.6"),
            },
        ),
    }
)


def gpu_uuid(profile: DeviceProfile, node_name: str, index: int) -> str:
    return profile.uuid_prefix + str(uuid.uuid5(_UUID_NAMESPACE, f"{node_name}/{index}"))


@dataclass(frozen=True)
class NodeInventory:
    node_name: str
    profile: DeviceProfile
    gpus: tuple[Gpu, ...]

    def by_name(self, name: str) -> Gpu | None:
        return next((g for g in self.gpus if g.name == name), None)

    def by_uuid(self, gpu_uuid_: str) -> Gpu | None:
        return next((g for g in self.gpus if g.uuid == gpu_uuid_), None)


def build_inventory(profile: DeviceProfile, node_name: str, count: int) -> NodeInventory:
    gpus = []
    for index in range(count):
        ident = gpu_uuid(profile, node_name, index)
        gpus.append(
            Gpu(
                name=f"gpu-{index}",
                index=index,
                uuid=ident,
                model=profile.model,
                attributes=MappingProxyType(profile.attributes_for(index, ident)),
                capacity=MappingProxyType({"memory": profile.memory}),
            )
        )
    return NodeInventory(node_name=node_name, profile=profile, gpus=tuple(gpus))
