"""Assembles the DRA kubelet plugin: sockets, ResourceSlice resync loop, clean shutdown."""

from __future__ import annotations

import logging
import threading

import grpc

from fake_driver.config import DriverConfig
from fake_driver.dra_plugin.checkpoint import Checkpoint
from fake_driver.dra_plugin.kube_api import KubeApi
from fake_driver.dra_plugin.preparer import ClaimPreparer
from fake_driver.dra_plugin.registration import RegistrationService, add_registration_service, live_peers
from fake_driver.dra_plugin.service import SUPPORTED_SERVICES, add_dra_services
from fake_driver.dra_plugin.slices import SlicePublisher
from fake_driver.exposure import EXPOSURE_FILES, VIA_DRA, write_device_files
from fake_driver.grpc_unix import start_server, stop_server
from fake_driver.runtime import Readiness

log = logging.getLogger(__name__)


class DraPlugin:
    def __init__(self, config: DriverConfig, api: KubeApi, resync_seconds: float = 10.0):
        self.config = config
        self.inventory = config.inventory()
        self.preparer = ClaimPreparer(
            api,
            config.driver_name,
            self.inventory,
            config.state_dir,
            config.cdi_dir,
            Checkpoint(config.checkpoint_path),
            config.defects,
            config.exposure,
        )
        self.publisher = SlicePublisher(api, config.driver_name, self.inventory, config.defects)
        self._resync_seconds = resync_seconds
        self.readiness = Readiness(config.ready_port)
        self._state_lock = threading.Lock()
        self._registered = False
        self._published = False
        self._dra_server: grpc.Server | None = None
        self._registration_server: grpc.Server | None = None

    def start(self) -> None:
        """Serve the DRA service first: the kubelet dials it as soon as it sees the registration socket."""
        cfg = self.config
        if cfg.exposure == EXPOSURE_FILES:
            write_device_files(cfg.state_dir, cfg.node_name, VIA_DRA, self.inventory.gpus)
        self.readiness.serve()
        self._dra_server = start_server(cfg.dra_socket, lambda s: add_dra_services(s, self.preparer))
        registration = RegistrationService(
            "DRAPlugin", cfg.driver_name, str(cfg.dra_socket), SUPPORTED_SERVICES, self._on_registration_status
        )
        self._registration_server = start_server(
            cfg.registration_socket, lambda s: add_registration_service(s, registration)
        )
        log.info(
            "serving %d %s GPUs as driver %s on node %s",
            len(self.inventory.gpus),
            cfg.profile.name,
            cfg.driver_name,
            cfg.node_name,
        )

    def run(self, stop: threading.Event) -> None:
        try:
            self.start()
            while True:
                self.publish_once()
                if stop.wait(self._resync_seconds):
                    return
        finally:
            self.shutdown()

    def publish_once(self) -> None:
        try:
            self.publisher.reconcile()
            published = True
        except Exception:  # noqa: BLE001 - API hiccups are retried on the next resync
            log.exception("publishing ResourceSlices failed; retrying in %.0fs", self._resync_seconds)
            published = False
        self._update_state(published=published)

    def _on_registration_status(self, registered: bool, error: str) -> None:
        self._update_state(registered=registered)

    def _update_state(self, *, registered: bool | None = None, published: bool | None = None) -> None:
        with self._state_lock:
            if registered is not None:
                self._registered = registered
            if published is not None:
                self._published = published
            self.readiness.set(self._registered and self._published)

    def shutdown(self) -> None:
        """Registration socket goes first so the kubelet stops routing new claims here."""
        self.readiness.close()
        if self._registration_server is not None:
            stop_server(self._registration_server, self.config.registration_socket)
            self._registration_server = None
        peers = live_peers(self.config.plugin_registry_dir, self.config.registration_socket, self.config.driver_name)
        if peers:
            # A rolling update: the new instance serves the same devices and keeps the slices.
            log.info("leaving the ResourceSlices to the other instance(s) %s", [p.name for p in peers])
        elif self.config.delete_slices_on_exit:
            try:
                self.publisher.delete_all()
            except Exception:  # noqa: BLE001 - best effort; the Node owner reference is the backstop
                log.exception("deleting ResourceSlices on exit failed")
        if self._dra_server is not None:
            stop_server(self._dra_server, self.config.dra_socket)
            self._dra_server = None
        log.info("stopped")
