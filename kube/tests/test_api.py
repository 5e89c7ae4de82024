"""Api.raw and Api.server_version through the real kubernetes client, against a local HTTP server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from kubernetes.client.exceptions import ApiException

from kube.api import TRANSIENT_ERRORS, Api, NotRunning

METRICS = 'kubernetes_feature_enabled{name="DRAExtendedResource",stage="BETA"} 1\n'
VERSION = {
    "major": "1",
    "minor": "36",
    "gitVersion": "v1.36.3",
    "gitCommit": "0",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.25",
    "compiler": "gc",
    "platform": "linux/amd64",
}
BODIES = {
    "/metrics": ("text/plain; version=0.0.4", METRICS),
    "/version/": ("application/json", json.dumps(VERSION)),
}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        content_type, body = BODIES.get(self.path, ("application/json", '{"kind": "Status", "code": 404}'))
        self.send_response(200 if self.path in BODIES else 404)
        self.send_header("Content-Type", content_type)
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass  # keeps pytest's output clean


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "local",
                "clusters": [{"name": "local", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
                "users": [{"name": "local", "user": {"token": "t"}}],
                "contexts": [{"name": "local", "context": {"cluster": "local", "user": "local"}}],
            }
        )
    )
    yield Api(kubeconfig)
    server.shutdown()
    server.server_close()


def test_raw_returns_the_body_as_text(api: Api) -> None:
    assert api.raw("/metrics") == METRICS


def test_raw_raises_api_exception_on_an_error_status(api: Api) -> None:
    # Waits on a restarting cluster treat it as "not yet".
    with pytest.raises(ApiException) as caught:
        api.raw("/api/v1/nodes/gone/proxy/metrics")
    assert caught.value.status == 404
    assert isinstance(caught.value, TRANSIENT_ERRORS)


def test_server_version(api: Api) -> None:
    assert api.server_version() == "v1.36.3"


class CouldNotStart:
    """An exec session as the client gives it when the runtime could not start the command: the
    error channel holds the runtime's message where the client looks for an exit code."""

    def run_forever(self, timeout: float) -> None:
        pass

    def is_open(self) -> bool:
        return False

    @property
    def returncode(self) -> int:
        return int("Internal error occurred: error executing command in container: container not created")

    def close(self) -> None:
        pass


def test_a_command_that_cannot_start_is_not_running_yet(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("kube.api.stream", lambda *args, **kwargs: CouldNotStart())
    with pytest.raises(NotRunning, match="'cat /state' could not start in drv/plugin-x: .*container not created") as e:
        api.exec("drv", "plugin-x", ["cat", "/state"])
    assert isinstance(e.value, TRANSIENT_ERRORS)
