"""Publishes this node's GPUs as one ResourceSlice in a pool named after the node."""

from __future__ import annotations

import logging
from typing import Any

from fake_driver.dra_plugin.kube_api import KubeApi, Object
from fake_driver.inventory import AttributeValue, Gpu, NodeInventory, Version

log = logging.getLogger(__name__)
# What a replace keeps of the stored object; resourceVersion makes it an optimistic update.
_KEPT_METADATA = ("name", "resourceVersion", "labels", "annotations", "ownerReferences")


def _typed_attribute(value: AttributeValue) -> dict[str, Any]:
    if isinstance(value, Version):
        return {"version": value.value}
    if isinstance(value, bool):  # before int: bool is an int subclass
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {"string": value}


def slice_device(gpu: Gpu) -> Object:
    return {
        "name": gpu.name,
        "attributes": {key: _typed_attribute(v) for key, v in gpu.attributes.items()},
        "capacity": {key: {"value": quantity} for key, quantity in gpu.capacity.items()},
    }


def _published_devices(resource_slice: Object) -> list[Object]:
    """The device fields this plugin owns, ignoring anything the API server may add."""
    return [
        {key: device.get(key, {}) for key in ("name", "attributes", "capacity")}
        for device in resource_slice.get("spec", {}).get("devices") or []
    ]


class SlicePublisher:
    def __init__(self, api: KubeApi, driver_name: str, inventory: NodeInventory, defects: frozenset[str] = frozenset()):
        self._api = api
        self._driver = driver_name
        self._node = inventory.node_name
        gpus = inventory.gpus[:-1] if "slice-missing-device" in defects else inventory.gpus
        self._devices = [slice_device(gpu) for gpu in gpus]
        if "slice-wrong-id" in defects:  # every attribute holding the GPU's identity says something else
            for device, gpu in zip(self._devices, gpus):
                device["attributes"] = {
                    k: ({"string": gpu.uuid[::-1]} if v == {"string": gpu.uuid} else v)
                    for k, v in device["attributes"].items()
                }

    def _spec(self, generation: int) -> Object:
        return {
            "driver": self._driver,
            "nodeName": self._node,
            "pool": {"name": self._node, "generation": generation, "resourceSliceCount": 1},
            "devices": self._devices,
        }

    def _is_current(self, resource_slice: Object) -> bool:
        spec = resource_slice.get("spec", {})
        pool = spec.get("pool", {})
        return (
            pool.get("name") == self._node
            and pool.get("resourceSliceCount") == 1
            and _published_devices(resource_slice) == self._devices
        )

    def reconcile(self) -> None:
        """Make the API hold exactly one up-to-date slice for this node; also repairs slices
        that someone else (e.g. the kubelet after a restart) deleted or changed."""
        existing = sorted(self._api.list_resource_slices(self._driver, self._node), key=lambda s: s["metadata"]["name"])
        newest = max((s["spec"].get("pool", {}).get("generation", 0) for s in existing), default=0)
        keep = next((s for s in existing if s["spec"].get("pool", {}).get("name") == self._node), None)
        if keep is None:
            body = {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {
                    "generateName": f"{self._node}-{self._driver}-",
                    "ownerReferences": [
                        {  # garbage collected with the Node
                            "apiVersion": "v1",
                            "kind": "Node",
                            "name": self._node,
                            "uid": self._api.get_node_uid(self._node),
                            "controller": True,
                        }
                    ],
                },
                "spec": self._spec(newest + 1),
            }
            created = self._api.create_resource_slice(body)
            log.info(
                "published %d devices in ResourceSlice %s (generation %d)",
                len(self._devices),
                created["metadata"]["name"],
                newest + 1,
            )
        elif not self._is_current(keep):
            # A new pool generation tells the scheduler to ignore what it saw before. The body is
            # rebuilt rather than edited: the client rejects fields its models do not know, and a
            # newer API server may return some.
            metadata = {key: keep["metadata"][key] for key in _KEPT_METADATA if key in keep["metadata"]}
            body = {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": metadata,
                "spec": self._spec(newest + 1),
            }
            self._api.replace_resource_slice(keep["metadata"]["name"], body)
            log.info("updated ResourceSlice %s to generation %d", keep["metadata"]["name"], newest + 1)
        for stale in existing:
            if stale is not keep:
                self._api.delete_resource_slice(stale["metadata"]["name"])
                log.info("deleted stale ResourceSlice %s", stale["metadata"]["name"])

    def delete_all(self) -> None:
        for resource_slice in self._api.list_resource_slices(self._driver, self._node):
            self._api.delete_resource_slice(resource_slice["metadata"]["name"])
            log.info("deleted ResourceSlice %s", resource_slice["metadata"]["name"])
