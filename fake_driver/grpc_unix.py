"""gRPC servers and channels on Unix domain sockets, the kubelet's only transport for plugins."""

from __future__ import annotations

from concurrent import futures
from pathlib import Path
from typing import Callable

import grpc

# sun_path is 108 bytes including the terminating NUL.
MAX_SOCKET_PATH_BYTES = 107


def check_socket_path(path: Path) -> None:
    if len(str(path).encode()) > MAX_SOCKET_PATH_BYTES:
        raise ValueError(f"socket path {path} is longer than {MAX_SOCKET_PATH_BYTES} bytes")


def start_server(path: Path, register: Callable[[grpc.Server], None], workers: int = 8) -> grpc.Server:
    """Serve on `path`, replacing a stale socket left by a previous process."""
    check_socket_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers))
    register(server)
    server.add_insecure_port(f"unix://{path}")
    server.start()
    return server


def stop_server(server: grpc.Server, path: Path, grace_seconds: float = 2.0) -> None:
    server.stop(grace_seconds).wait()
    path.unlink(missing_ok=True)


def channel(path: Path) -> grpc.Channel:
    check_socket_path(path)
    return grpc.insecure_channel(f"unix://{path}")
