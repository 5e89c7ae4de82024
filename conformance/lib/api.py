"""Thin access to a cluster's API through plain dicts (what a user sees with kubectl -o yaml)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from kubernetes import config as kube_config
from kubernetes.client import ApiClient, VersionApi
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError

Obj = dict[str, Any]


@dataclass
class Api:
    kubeconfig: Path | None  # None: the current KUBECONFIG / in-cluster config

    @cached_property
    def client(self) -> ApiClient:
        return kube_config.new_client_from_config(config_file=str(self.kubeconfig) if self.kubeconfig else None)

    @cached_property
    def dynamic(self) -> DynamicClient:
        return DynamicClient(self.client)

    def server_version(self) -> str:
        return VersionApi(self.client).get_code().git_version

    def resource(self, api_version: str, kind: str):
        return self.dynamic.resources.get(api_version=api_version, kind=kind)

    def create(self, obj: Obj, namespace: str | None = None) -> Obj:
        res = self.resource(obj["apiVersion"], obj["kind"])
        ns = namespace or obj.get("metadata", {}).get("namespace")
        return res.create(body=obj, namespace=ns if res.namespaced else None).to_dict()

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        try:
            return self.resource(api_version, kind).get(name=name, namespace=namespace).to_dict()
        except NotFoundError:
            return None

    def list(self, api_version: str, kind: str, namespace: str | None = None, **selectors: str) -> list[Obj]:
        return self.resource(api_version, kind).get(namespace=namespace, **selectors).to_dict()["items"]

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        try:
            self.resource(api_version, kind).delete(name=name, namespace=namespace)
        except NotFoundError:
            pass

    def served(self, group_version: str) -> bool:
        group, _, version = group_version.rpartition("/")
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            return self.dynamic.request("GET", path).groupVersion == group_version
        except NotFoundError:
            return False
