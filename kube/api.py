"""Thin access to a cluster's API through plain dicts (what a user sees with kubectl -o yaml)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from kubernetes import config as kube_config
from kubernetes.client import ApiClient, CoreV1Api, VersionApi
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError
from kubernetes.stream import stream
from urllib3.exceptions import HTTPError

Obj = dict[str, Any]
# The DRA API version everything here reads and writes (GA since Kubernetes 1.34).
RESOURCE_API = "resource.k8s.io/v1"

# What reading the API raises while its components restart under us: refused or reset
# connections, urllib3's errors around them, and API errors (503 while kube-apiserver starts,
# 403 until its authorizer has loaded). Waits on a changing cluster pass them as `transient`.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (ConnectionError, HTTPError, ApiException)


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
        """kube-apiserver's gitVersion, e.g. v1.36.3."""
        return VersionApi(self.client).get_code().git_version

    def raw(self, path: str) -> str:
        """The body of a GET of any path, e.g. /metrics or /api/v1/nodes/<node>/proxy/metrics."""
        # Straight through the generated client: the dynamic one needs discovery first and parses JSON.
        request = self.client.param_serialize("GET", path, header_params={"Accept": "*/*"},
                                              auth_settings=["BearerToken"])
        response = self.client.call_api(*request)
        response.read()
        # Raises ApiException for a status other than 2xx, as every other read does.
        return self.client.response_deserialize(response, {"2XX": "bytes"}).data.decode()

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
        """Objects of a kind; selectors are label_selector= and field_selector= expressions."""
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

    def exec(self, namespace: str, pod: str, command: list[str], container: str | None = None) -> str:
        """Run a command in a running container; its stdout and stderr, as `kubectl exec` shows them."""
        kwargs = {"container": container} if container else {}
        return stream(CoreV1Api(self.client).connect_get_namespaced_pod_exec, pod, namespace, command=command,
                      stderr=True, stdin=False, stdout=True, tty=False, **kwargs)

    def logs(self, namespace: str, pod: str, container: str) -> str:
        return CoreV1Api(self.client).read_namespaced_pod_log(pod, namespace, container=container)
