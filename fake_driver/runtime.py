"""Process plumbing shared by both plugins: logging, stop signals, readiness endpoint."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def configure_logging(component: str) -> logging.Logger:
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("FAKE_GPU_LOG_LEVEL", "INFO").upper(),
        format=f"%(asctime)s {component} %(levelname)s %(name)s: %(message)s",
    )
    return logging.getLogger(component)


def stop_event_on_signals() -> threading.Event:
    """An event set by SIGTERM (pod deletion) or SIGINT (Ctrl-C in local runs)."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    return stop


class Readiness:
    """Whether the plugin serves, answered over HTTP for the pod's readinessProbe: GET /readyz
    gives 200 when ready, 503 when not (and nothing answers before `serve` or after `close`).

    An HTTP probe costs the kubelet one request; the exec probe it replaces started a process in
    the container every 2 s, which cost the node 0.7-1.6 % of a core per driver pod (runc, shim,
    containerd, kubelet; docs/timings.md, 2026-12-05)."""

    def __init__(self, port: int):
        self._port = port
        self._ready = threading.Event()
        self._server: ThreadingHTTPServer | None = None

    def serve(self) -> None:
        readiness = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
                if self.path != "/readyz":
                    self.send_error(404)
                    return
                ready = readiness.is_set()
                body = b"ok\n" if ready else b"not ready\n"
                self.send_response(200 if ready else 503)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:  # the kubelet asks every period: no log line each time
                pass

        self._server = ThreadingHTTPServer(("", self._port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="readiness", daemon=True).start()

    @property
    def port(self) -> int:
        """The port served (the configured one, or the one the kernel chose for port 0)."""
        return self._server.server_address[1] if self._server else self._port

    def set(self, ready: bool) -> None:
        if ready:
            self._ready.set()
        else:
            self._ready.clear()

    def clear(self) -> None:
        self._ready.clear()

    def is_set(self) -> bool:
        return self._ready.is_set()

    def close(self) -> None:
        self._ready.clear()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
