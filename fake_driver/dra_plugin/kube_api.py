"""The few API server calls the DRA plugin makes, behind an interface unit tests can fake.

Plain HTTP(S) with the standard library. Objects travel as JSON dicts, so fields newer than any
client library survive a read-modify-write and tests can write fixtures as literal dicts. The
official client is not used here: importing it alone took 0.55 CPU-s at every start of every
driver pod, and its wheel was two fifths of the driver image that every worker imports
(2026-12-05; docs/timings.md, changelog 8fee08c).
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Protocol

import yaml

Object = dict[str, Any]
_TIMEOUT_SECONDS = 30
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
_RESOURCE = "/apis/resource.k8s.io/v1"


class KubeApi(Protocol):
    def get_resource_claim(self, namespace: str, name: str) -> Object | None: ...
    def get_node_uid(self, name: str) -> str: ...
    def list_resource_slices(self, driver: str, node_name: str) -> list[Object]: ...
    def create_resource_slice(self, body: Object) -> Object: ...
    def replace_resource_slice(self, name: str, body: Object) -> Object: ...
    def delete_resource_slice(self, name: str) -> None: ...


class CredentialsError(Exception):
    """Neither an in-cluster service account nor a usable kubeconfig."""


class KubeApiError(Exception):
    def __init__(self, status: int, method: str, path: str, message: str):
        super().__init__(f"{method} {path}: HTTP {status}: {message}")
        self.status = status


class RestKubeApi:
    """KubeApi over the API server's REST paths, resource.k8s.io/v1."""

    def __init__(
        self, server: str, token: str | None = None, token_file: Path | None = None, tls: ssl.SSLContext | None = None
    ):
        self._server = server.rstrip("/")
        self._token, self._token_file = token, token_file
        self._tls = tls

    @classmethod
    def from_environment(cls) -> RestKubeApi:
        """In-cluster service account, else KUBECONFIG / ~/.kube/config for local runs."""
        host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
        if host and port and (SERVICE_ACCOUNT / "token").exists():
            # The kubelet rotates the projected token: it is read again for every request.
            return cls(
                f"https://{_join_host(host)}:{port}",
                token_file=SERVICE_ACCOUNT / "token",
                tls=ssl.create_default_context(cafile=str(SERVICE_ACCOUNT / "ca.crt")),
            )
        return cls.from_kubeconfig(Path(os.environ.get("KUBECONFIG") or Path.home() / ".kube" / "config"))

    @classmethod
    def from_kubeconfig(cls, path: Path) -> RestKubeApi:
        """The current context's server and user: a token and/or a client certificate."""
        try:
            config = yaml.safe_load(path.read_text())
            context = _named(config, "contexts", config["current-context"])
            cluster, user = _named(config, "clusters", context["cluster"]), _named(config, "users", context["user"])
            server = cluster["server"]
            tls = _tls(cluster, user, path.parent) if server.startswith("https:") else None
        except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as exc:  # ssl.SSLError is an OSError
            raise CredentialsError(
                f"no in-cluster service account, and no usable kubeconfig at {path}: {exc!r}"
            ) from None
        return cls(server, token=user.get("token"), tls=tls)

    def _call(
        self,
        method: str,
        path: str,
        body: Object | None = None,
        query: dict[str, str] | None = None,
        missing_ok: bool = False,
    ) -> Object | None:
        url = self._server + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        headers = {"Accept": "application/json"}
        token = self._token_file.read_text().strip() if self._token_file else self._token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = None
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=_TIMEOUT_SECONDS, context=self._tls) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            if exc.code == 404 and missing_ok:
                return None
            raise KubeApiError(exc.code, method, path, exc.read().decode(errors="replace")[:500]) from None

    def get_resource_claim(self, namespace: str, name: str) -> Object | None:
        return self._call("GET", f"{_RESOURCE}/namespaces/{namespace}/resourceclaims/{name}", missing_ok=True)

    def get_node_uid(self, name: str) -> str:
        return self._call("GET", f"/api/v1/nodes/{name}")["metadata"]["uid"]

    def list_resource_slices(self, driver: str, node_name: str) -> list[Object]:
        listing = self._call(
            "GET",
            f"{_RESOURCE}/resourceslices",
            query={"fieldSelector": f"spec.driver={driver},spec.nodeName={node_name}"},
        )
        return listing.get("items") or []

    def create_resource_slice(self, body: Object) -> Object:
        return self._call("POST", f"{_RESOURCE}/resourceslices", body)

    def replace_resource_slice(self, name: str, body: Object) -> Object:
        return self._call("PUT", f"{_RESOURCE}/resourceslices/{name}", body)

    def delete_resource_slice(self, name: str) -> None:
        self._call("DELETE", f"{_RESOURCE}/resourceslices/{name}", missing_ok=True)


def _join_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host  # an IPv6 service address


def _named(config: Object, section: str, name: str) -> Object:
    key = section[:-1]  # contexts -> context
    for entry in config[section]:
        if entry["name"] == name:
            return entry[key]
    raise KeyError(f"no {key} named {name!r} in {section}")


def _tls(cluster: Object, user: Object, base: Path) -> ssl.SSLContext:
    """Who the server must be (its CA, unless verification is off) and who we are (a client
    certificate, when the user has one)."""
    tls = ssl.create_default_context(cadata=_pem(cluster, "certificate-authority", base))
    if cluster.get("insecure-skip-tls-verify"):
        tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
    if user.get("client-certificate") or user.get("client-certificate-data"):
        _load_client_certificate(tls, _pem(user, "client-certificate", base), _pem(user, "client-key", base))
    return tls


def _pem(entry: Object, field: str, base: Path) -> str | None:
    """A kubeconfig's `field` (a file, relative to the kubeconfig) or `field-data` (base64) as PEM text."""
    if entry.get(f"{field}-data"):
        return base64.b64decode(entry[f"{field}-data"]).decode()
    if entry.get(field):
        return (base / entry[field]).read_text()
    return None


def _load_client_certificate(tls: ssl.SSLContext, certificate: str | None, key: str | None) -> None:
    """ssl loads a certificate chain from files only: through a private temporary directory."""
    with tempfile.TemporaryDirectory() as directory:
        cert_file, key_file = Path(directory) / "cert.pem", Path(directory) / "key.pem"
        cert_file.write_text(certificate or "")
        key_file.write_text(key or "")
        tls.load_cert_chain(str(cert_file), str(key_file))
