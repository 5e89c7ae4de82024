"""The few API server calls the DRA plugin makes, behind an interface unit tests can fake.

Objects travel as plain JSON dicts (no client model classes), so fields newer than the client
library survive a read-modify-write and tests can write fixtures as literal dicts.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from kubernetes import client, config
from kubernetes.client.rest import ApiException

Object = dict[str, Any]
_TIMEOUT_SECONDS = 30


class KubeApi(Protocol):
    def get_resource_claim(self, namespace: str, name: str) -> Object | None: ...
    def get_node_uid(self, name: str) -> str: ...
    def list_resource_slices(self, driver: str, node_name: str) -> list[Object]: ...
    def create_resource_slice(self, body: Object) -> Object: ...
    def replace_resource_slice(self, name: str, body: Object) -> Object: ...
    def delete_resource_slice(self, name: str) -> None: ...


class ClientKubeApi:
    """KubeApi on the official client, resource.k8s.io/v1."""

    def __init__(self, api_client: client.ApiClient):
        self._resource = client.ResourceV1Api(api_client)
        self._core = client.CoreV1Api(api_client)

    @classmethod
    def from_environment(cls) -> ClientKubeApi:
        """In-cluster service account, else KUBECONFIG / ~/.kube/config for local runs."""
        try:
            config.load_incluster_config()
        except config.ConfigException:
            config.load_kube_config()
        return cls(client.ApiClient())

    @staticmethod
    def _json(response: Any) -> Object:
        return json.loads(response.data)

    def get_resource_claim(self, namespace: str, name: str) -> Object | None:
        try:
            return self._json(self._resource.read_namespaced_resource_claim(
                name, namespace, _preload_content=False, _request_timeout=_TIMEOUT_SECONDS))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def get_node_uid(self, name: str) -> str:
        node = self._json(self._core.read_node(name, _preload_content=False, _request_timeout=_TIMEOUT_SECONDS))
        return node["metadata"]["uid"]

    def list_resource_slices(self, driver: str, node_name: str) -> list[Object]:
        listing = self._json(self._resource.list_resource_slice(
            field_selector=f"spec.driver={driver},spec.nodeName={node_name}",
            _preload_content=False, _request_timeout=_TIMEOUT_SECONDS))
        return listing.get("items") or []

    def create_resource_slice(self, body: Object) -> Object:
        return self._json(self._resource.create_resource_slice(
            body, _preload_content=False, _request_timeout=_TIMEOUT_SECONDS))

    def replace_resource_slice(self, name: str, body: Object) -> Object:
        return self._json(self._resource.replace_resource_slice(
            name, body, _preload_content=False, _request_timeout=_TIMEOUT_SECONDS))

    def delete_resource_slice(self, name: str) -> None:
        try:
            self._resource.delete_resource_slice(name, _preload_content=False, _request_timeout=_TIMEOUT_SECONDS)
        except ApiException as exc:
            if exc.status != 404:
                raise
