"""NodePrepareResources / NodeUnprepareResources, independent of the gRPC API version."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from fake_driver import cdi
from fake_driver.defects import neighbour
from fake_driver.dra_plugin.checkpoint import Allocation, Checkpoint, PreparedClaim
from fake_driver.dra_plugin.kube_api import KubeApi, Object
from fake_driver.exposure import EXPOSURE_FILES, VIA_DRA, ContainerEdits, container_edits, env_value, write_device_files
from fake_driver.inventory import Gpu, NodeInventory


class ClaimRef(NamedTuple):
    namespace: str
    uid: str
    name: str


@dataclass(frozen=True)
class PreparedDevice:
    request_names: tuple[str, ...]
    pool: str
    device: str
    cdi_device_ids: tuple[str, ...]


@dataclass(frozen=True)
class PrepareResult:
    devices: tuple[PreparedDevice, ...] = ()
    error: str = ""


class PrepareError(Exception):
    pass


class ClaimPreparer:
    def __init__(
        self,
        api: KubeApi,
        driver_name: str,
        inventory: NodeInventory,
        state_dir: Path,
        cdi_dir: Path,
        checkpoint: Checkpoint,
        defects: frozenset[str] = frozenset(),
        exposure: str = EXPOSURE_FILES,
    ):
        self._api = api
        self._driver = driver_name
        self._inventory = inventory
        self._state_dir = state_dir
        self._cdi_dir = cdi_dir
        self._kind = cdi.CdiKind.for_driver(driver_name)
        self._checkpoint = checkpoint
        self._lock = threading.Lock()  # the kubelet may call concurrently; one checkpoint file
        self._defects = defects
        self._exposure = exposure  # fake_driver.exposure: how containers are told their devices
        self._prepared_here: set[str] = set()  # claim UIDs this process prepared (for a defect)

    def spec_path(self, claim_uid: str) -> Path:
        return self._kind.spec_path(self._cdi_dir, claim_uid)

    def cdi_device_name(self, claim_uid: str, gpu: Gpu) -> str:
        return f"{claim_uid}-{gpu.name}"

    def prepare(self, ref: ClaimRef) -> PrepareResult:
        try:
            with self._lock:
                claim = self._checkpoint.claims.get(ref.uid) or self._read_claim(ref)
                devices = self._prepare_devices(ref.uid, claim)
                if ref.uid not in self._checkpoint.claims:
                    self._checkpoint.claims[ref.uid] = claim
                    self._checkpoint.save()
                self._prepared_here.add(ref.uid)
            return PrepareResult(devices=devices)
        except PrepareError as exc:
            return PrepareResult(error=f"claim {ref.namespace}/{ref.name} ({ref.uid}): {exc}")

    def unprepare(self, ref: ClaimRef) -> None:
        """Needs only the UID, so it also works for claims a lost checkpoint forgot about."""
        if "no-unprepare" in self._defects:
            return
        if "forgets-prepared-on-restart" in self._defects and ref.uid not in self._prepared_here:
            return
        with self._lock:
            cdi.remove_spec(self.spec_path(ref.uid))
            if self._checkpoint.claims.pop(ref.uid, None) is not None:
                self._checkpoint.save()

    def _read_claim(self, ref: ClaimRef) -> PreparedClaim:
        claim = self._api.get_resource_claim(ref.namespace, ref.name)
        if claim is None:
            raise PrepareError("ResourceClaim not found")
        uid = claim.get("metadata", {}).get("uid")
        if uid != ref.uid:
            raise PrepareError(f"ResourceClaim has UID {uid}, the kubelet asked for {ref.uid}")
        return PreparedClaim(namespace=ref.namespace, name=ref.name, allocations=self._our_allocations(claim))

    def _our_allocations(self, claim: Object) -> tuple[Allocation, ...]:
        allocation = (claim.get("status") or {}).get("allocation")
        if not allocation:
            raise PrepareError("ResourceClaim is not allocated")
        allocations = []
        for result in (allocation.get("devices") or {}).get("results") or []:
            if result.get("driver") != self._driver:
                continue
            if result.get("pool") != self._inventory.node_name:
                raise PrepareError(
                    f"device {result.get('device')} is in pool {result.get('pool')}, "
                    f"not in this node's pool {self._inventory.node_name}"
                )
            allocations.append(Allocation(request=result["request"], device=result["device"]))
        return tuple(allocations)

    def _prepare_devices(self, claim_uid: str, claim: PreparedClaim) -> tuple[PreparedDevice, ...]:
        """Write the host files and the claim's CDI spec; describe the devices for the kubelet."""
        gpus: dict[str, Gpu] = {}
        for allocation in claim.allocations:
            gpu = self._inventory.by_name(allocation.device)
            if gpu is None:
                raise PrepareError(f"device {allocation.device} is not one of this node's GPUs")
            gpus[gpu.name] = gpu
        if not gpus:
            return ()
        if "fail-multi-device-prepare" in self._defects and len(gpus) > 1:
            raise PrepareError(f"defect fail-multi-device-prepare: refusing {len(gpus)} devices")
        if self._exposure == EXPOSURE_FILES:
            write_device_files(self._state_dir, self._inventory.node_name, VIA_DRA, self._inventory.gpus)
        spec_devices = [
            cdi.CdiDevice(name=self.cdi_device_name(claim_uid, gpu), edits=self._edits(gpu, last=i == len(gpus) - 1))
            for i, gpu in enumerate(gpus.values())
        ]
        cdi.write_spec(self.spec_path(claim_uid), cdi.spec_document(self._kind, spec_devices))
        return tuple(
            PreparedDevice(
                request_names=(allocation.request,),
                pool=self._inventory.node_name,
                device=allocation.device,
                cdi_device_ids=(self._kind.device_id(self._named_in_reply(claim_uid, gpus, allocation.device)),),
            )
            for allocation in claim.allocations
        )

    def _named_in_reply(self, claim_uid: str, gpus: dict[str, Gpu], device: str) -> str:
        """The CDI device name the reply gives for `device`; the self-check defect names one the
        written spec does not define, for claims of more than one device."""
        name = self.cdi_device_name(claim_uid, gpus[device])
        return f"{name}-unknown" if "cdi-unknown-id" in self._defects and len(gpus) > 1 else name

    def _edits(self, gpu: Gpu, last: bool) -> ContainerEdits:
        """What a container using `gpu` gets; the self-check defects bend it (off by default)."""
        gpus = self._inventory.gpus
        shown = neighbour(gpus, gpu) if "prepare-next-device" in self._defects else gpu
        edits = container_edits(self._state_dir, VIA_DRA, [shown], self._exposure)
        if "extra-device" in self._defects and last:
            extra = container_edits(self._state_dir, VIA_DRA, [neighbour(gpus, gpu)], self._exposure)
            edits = ContainerEdits({**edits.env, **extra.env}, [*edits.mounts, *extra.mounts])
        if "env-extra-gpu" in self._defects and last:
            extra = container_edits(self._state_dir, VIA_DRA, [neighbour(gpus, gpu)], self._exposure)
            edits = ContainerEdits({**edits.env, **extra.env}, edits.mounts)
        if "env-names-other-gpu" in self._defects:
            edits = ContainerEdits(
                {name: env_value(neighbour(gpus, shown), self._exposure) for name in edits.env}, edits.mounts
            )
        return edits
