"""The wire identity the kubelet dials: packages, services, methods, field numbers."""

from __future__ import annotations

import pytest

from fake_driver._gen import deviceplugin_v1beta1_pb2, dra_v1_pb2, dra_v1beta1_pb2, pluginregistration_pb2


def method_paths(module, service: str) -> set[str]:
    descriptor = module.DESCRIPTOR.services_by_name[service]
    return {f"/{descriptor.full_name}/{m.name}" for m in descriptor.methods}


def field_numbers(message) -> dict[str, int]:
    return {f.name: f.number for f in message.DESCRIPTOR.fields}


def test_registration_service_path():
    assert method_paths(pluginregistration_pb2, "Registration") == {
        "/pluginregistration.Registration/GetInfo",
        "/pluginregistration.Registration/NotifyRegistrationStatus",
    }
    assert field_numbers(pluginregistration_pb2.PluginInfo) == {
        "type": 1,
        "name": 2,
        "endpoint": 3,
        "supported_versions": 4,
    }
    assert field_numbers(pluginregistration_pb2.RegistrationStatus) == {"plugin_registered": 1, "error": 2}


@pytest.mark.parametrize("module,version", [(dra_v1_pb2, "v1"), (dra_v1beta1_pb2, "v1beta1")])
def test_dra_service_paths_and_fields(module, version):
    package = f"k8s.io.kubelet.pkg.apis.dra.{version}"
    assert method_paths(module, "DRAPlugin") == {
        f"/{package}.DRAPlugin/NodePrepareResources",
        f"/{package}.DRAPlugin/NodeUnprepareResources",
    }
    assert field_numbers(module.Claim) == {"namespace": 1, "uid": 2, "name": 3}
    assert field_numbers(module.NodePrepareResourceResponse) == {"devices": 1, "error": 2}
    expected_device = {"request_names": 1, "pool_name": 2, "device_name": 3, "cdi_device_ids": 4}
    if version == "v1":
        expected_device["share_id"] = 5
    assert field_numbers(module.Device) == expected_device


def test_device_plugin_service_paths_and_fields():
    pb = deviceplugin_v1beta1_pb2
    assert method_paths(pb, "Registration") == {"/v1beta1.Registration/Register"}
    assert method_paths(pb, "DevicePlugin") == {
        f"/v1beta1.DevicePlugin/{m}"
        for m in ("GetDevicePluginOptions", "ListAndWatch", "GetPreferredAllocation", "Allocate", "PreStartContainer")
    }
    assert field_numbers(pb.RegisterRequest) == {"version": 1, "endpoint": 2, "resource_name": 3, "options": 4}
    assert field_numbers(pb.ContainerAllocateResponse) == {
        "envs": 1,
        "mounts": 2,
        "devices": 3,
        "annotations": 4,
        "cdi_devices": 5,
    }
    assert field_numbers(pb.Mount) == {"container_path": 1, "host_path": 2, "read_only": 3}
    assert field_numbers(pb.Device) == {"ID": 1, "health": 2, "topology": 3}
    assert field_numbers(pb.ContainerPreferredAllocationRequest) == {
        "available_deviceIDs": 1,
        "must_include_deviceIDs": 2,
        "allocation_size": 3,
    }
