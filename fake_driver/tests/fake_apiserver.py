"""A tiny stateful HTTP stand-in for the API server paths the DRA plugin uses, so its API
client (and the plugin's entry point via KUBECONFIG) can be tested without a cluster."""

from __future__ import annotations

import itertools
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

_CLAIM = re.compile(r"^/apis/resource\.k8s\.io/v1/namespaces/([^/]+)/resourceclaims/([^/]+)$")
_NODE = re.compile(r"^/api/v1/nodes/([^/]+)$")
_SLICES = "/apis/resource.k8s.io/v1/resourceslices"
_SLICE = re.compile(rf"^{re.escape(_SLICES)}/([^/]+)$")


class FakeApiServer:
    def __init__(self) -> None:
        self.claims: dict[tuple[str, str], dict] = {}
        self.slices: dict[str, dict] = {}
        self.requests: list[tuple[str, str, dict[str, list[str]], Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._names = itertools.count()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    def write_kubeconfig(self, path: Path) -> Path:
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "fake",
                    "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
                    "users": [{"name": "fake", "user": {"token": "fake-token"}}],
                    "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
                }
            )
        )
        return path

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        with self._lock:
            self.requests.append((method, path, query, body))
            if method == "GET" and (m := _CLAIM.match(path)):
                claim = self.claims.get((m[1], m[2]))
                return (200, claim) if claim else _not_found()
            if method == "GET" and (m := _NODE.match(path)):
                return 200, {"metadata": {"name": m[1], "uid": f"uid-{m[1]}"}}
            if method == "GET" and path == _SLICES:
                selector = dict(t.split("=", 1) for t in query.get("fieldSelector", [""])[0].split(",") if t)
                items = [
                    s
                    for s in self.slices.values()
                    if all(s["spec"].get(k.removeprefix("spec.")) == v for k, v in selector.items())
                ]
                return 200, {"kind": "ResourceSliceList", "items": items}
            if method == "POST" and path == _SLICES:
                body["metadata"]["name"] = body["metadata"].pop("generateName") + f"{next(self._names):05d}"
                self.slices[body["metadata"]["name"]] = body
                return 201, body
            if (m := _SLICE.match(path)) and method in ("PUT", "DELETE"):
                if m[1] not in self.slices:
                    return _not_found()
                if method == "PUT":
                    self.slices[m[1]] = body
                    return 200, body
                return 200, self.slices.pop(m[1])
            return _not_found()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                url = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                fake.headers.append(dict(self.headers))
                status, reply = fake.handle(self.command, url.path, parse_qs(url.query), body)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

        return Handler


def _not_found() -> tuple[int, dict]:
    return 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}
