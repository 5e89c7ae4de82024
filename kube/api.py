"""Thin access to a cluster's API through plain dicts (what a user sees with kubectl -o yaml)."""

from __future__ import annotations

import builtins
import http.client
import ssl
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from kubernetes import config as kube_config
from kubernetes.client import ApiClient, CoreV1Api, V1Eviction, V1ObjectMeta, VersionApi
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError
from kubernetes.dynamic.resource import Resource
from kubernetes.stream import portforward, stream
from urllib3.exceptions import HTTPError

Obj = dict[str, Any]
# The DRA API version everything here reads and writes (GA since Kubernetes 1.34).
RESOURCE_API = "resource.k8s.io/v1"
RBAC_API = "rbac.authorization.k8s.io/v1"


# What reading the API raises while its components restart under us: refused or reset
# connections, urllib3's errors around them, and API errors (503 while kube-apiserver starts,
# 403 until its authorizer has loaded). Waits on a changing cluster pass them as `transient`.
class NotRunning(RuntimeError):
    """What a command was to run in is not running (yet): a container being created again after a
    crash, say. Waits treat it as "not yet"."""


TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (ConnectionError, HTTPError, ApiException, NotRunning)


class ExecError(RuntimeError):
    """A command run in a container exited non-zero (code) or did not end (code None)."""

    def __init__(self, where: str, command: list[str], code: int | None, output: str) -> None:
        ended = f"exited {code}" if code is not None else "did not end in time"
        shown = output.strip()[-600:] or "(no output)"
        super().__init__(f"{' '.join(command)!r} in {where} {ended}: {shown}")
        self.code, self.output = code, output


@dataclass
class Api:
    kubeconfig: Path | None  # None: the current KUBECONFIG / in-cluster config

    @cached_property
    def client(self) -> ApiClient:
        client: ApiClient = kube_config.new_client_from_config(
            config_file=str(self.kubeconfig) if self.kubeconfig else None
        )
        return client

    @cached_property
    def dynamic(self) -> DynamicClient:
        return DynamicClient(self.client)

    def server_version(self) -> str:
        """kube-apiserver's gitVersion, e.g. v1.36.3."""
        return VersionApi(self.client).get_code().git_version

    def raw(self, path: str) -> str:
        """The body of a GET of any path, e.g. /metrics or /api/v1/nodes/<node>/proxy/metrics."""
        # Straight through the generated client: the dynamic one needs discovery first and parses JSON.
        request = self.client.param_serialize(
            "GET", path, header_params={"Accept": "*/*"}, auth_settings=["BearerToken"]
        )
        response = self.client.call_api(*request)
        response.read()
        # Raises ApiException for a status other than 2xx, as every other read does. For "bytes" the
        # deserialized data is the raw body, which only raw_data is typed as.
        return self.client.response_deserialize(response, {"2XX": "bytes"}).raw_data.decode()

    def resource(self, api_version: str, kind: str) -> Resource:
        resource: Resource = self.dynamic.resources.get(api_version=api_version, kind=kind)
        return resource

    def create(self, obj: Obj, namespace: str | None = None) -> Obj:
        res = self.resource(obj["apiVersion"], obj["kind"])
        ns = namespace or obj.get("metadata", {}).get("namespace")
        created: Obj = res.create(body=obj, namespace=ns if res.namespaced else None).to_dict()
        return created

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        try:
            found: Obj = self.resource(api_version, kind).get(name=name, namespace=namespace).to_dict()
        except NotFoundError:
            return None
        return found

    def list(self, api_version: str, kind: str, namespace: str | None = None, **selectors: str) -> list[Obj]:
        """Objects of a kind; selectors are label_selector= and field_selector= expressions."""
        items: list[Obj] = self.resource(api_version, kind).get(namespace=namespace, **selectors).to_dict()["items"]
        return items

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        try:
            self.resource(api_version, kind).delete(name=name, namespace=namespace)
        except NotFoundError:
            pass

    def served(self, group_version: str) -> bool:
        group, _, version = group_version.rpartition("/")
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            served: str = self.dynamic.request("GET", path).groupVersion
        except NotFoundError:
            return False
        return served == group_version

    # builtins.list: in the class body, `list` is the method above.
    def exec(
        self, namespace: str, pod: str, command: builtins.list[str], container: str | None = None, timeout: float = 120
    ) -> str:
        """Run a command in a running container; its stdout and stderr, as `kubectl exec` shows them.
        A command that exits non-zero (or is still running after `timeout` s) is an ExecError with
        its output: what it printed is no result then."""
        kwargs = {"container": container} if container else {}
        session = stream(
            CoreV1Api(self.client).connect_get_namespaced_pod_exec,
            pod,
            namespace,
            command=command,
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
            _preload_content=False,
            **kwargs,
        )
        where = f"{namespace}/{pod}" + (f" ({container})" if container else "")
        try:
            session.run_forever(timeout=timeout)
            try:
                code = None if session.is_open() else session.returncode  # read before read_all clears the channels
            except ValueError as err:
                # The client reads an exit code from the error channel; a command that could not
                # start at all (the container not there) leaves the runtime's error there instead.
                raise NotRunning(f"{' '.join(command)!r} could not start in {where}: {err}") from None
            output: str = session.read_all()
        finally:
            session.close()
        if code != 0:
            raise ExecError(where, command, code, output)
        return output

    def pod_https_get(self, namespace: str, pod: str, port: int, path: str, timeout: float = 30) -> str:
        """The body of an HTTPS GET of `path` on a pod's port, reached through a port-forward and
        sent with this client's own credentials: how a component that listens on its node's
        loopback only (kube-controller-manager under kubeadm) is read without a shell on the node.
        The component's certificate is self-signed, so it is not verified. Non-2xx raises ApiException."""
        try:
            forward = portforward(
                CoreV1Api(self.client).connect_get_namespaced_pod_portforward, pod, namespace, ports=str(port)
            )
        except ApiException as err:
            # A refused websocket handshake comes with every response header after " -+-+- ":
            # the status says it all.
            status = str(err.reason).split(" -+-+- ", 1)[0]
            raise ApiException(status=err.status, reason=f"port-forward to {namespace}/{pod}: {status}") from err
        config = self.client.configuration
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        if config.cert_file:
            context.load_cert_chain(config.cert_file, config.key_file)
        headers = {"Accept": "*/*"}
        if token := config.get_api_key_with_prefix("BearerToken"):
            headers["Authorization"] = token
        # The forward's socket is one end of a socket pair; TLS runs over it like over TCP.
        raw = forward.socket(port)._socket
        raw.settimeout(timeout)
        connection = http.client.HTTPConnection("localhost", port, timeout=timeout)
        connection.sock = context.wrap_socket(raw)
        try:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            body = response.read().decode()
        finally:
            connection.close()
            forward.close()
        if not 200 <= response.status < 300:
            raise ApiException(status=response.status, reason=f"GET {path} on {namespace}/{pod}:{port}: {body[:300]}")
        return body

    def evict(self, namespace: str, pod: str) -> None:
        """Evict the pod as `kubectl drain` does (the Eviction API, which honours disruption budgets)."""
        CoreV1Api(self.client).create_namespaced_pod_eviction(
            pod,
            namespace,
            body=V1Eviction(
                api_version="policy/v1", kind="Eviction", metadata=V1ObjectMeta(name=pod, namespace=namespace)
            ),
        )

    def cordon(self, node: str, unschedulable: bool = True) -> None:
        """Mark the node (un)schedulable, as `kubectl cordon` / `uncordon` do."""
        self.resource("v1", "Node").patch(
            name=node,
            body={"spec": {"unschedulable": unschedulable or None}},
            content_type="application/merge-patch+json",
        )

    def logs(self, namespace: str, pod: str, container: str, previous: bool = False) -> str:
        """The container's log; previous: that of its last instance, the one that exited."""
        return CoreV1Api(self.client).read_namespaced_pod_log(pod, namespace, container=container, previous=previous)
