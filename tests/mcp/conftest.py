"""MCP test harness: real servers (the PyPI `mcp-server-time` and `tests/mcp/server.py`), real
managers with short timeouts, torn down after each test so no server outlives it."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import pytest

SERVER = str(Path(__file__).with_name("server.py"))


def server_entry(*flags: str, **settings: Any) -> dict:
    """A config.yaml entry running the scripted test server over stdio."""
    entry = {"command": sys.executable, "args": [SERVER, *flags], "connect_timeout": 20, "timeout": 10}
    entry.update(settings)
    return entry


def time_entry(**settings: Any) -> dict:
    """The real `mcp-server-time` from PyPI over stdio."""
    entry = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
             "connect_timeout": 20}
    entry.update(settings)
    return entry


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    """Poll until `predicate()` is truthy; fail the test with `what` after `timeout` seconds."""
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpServer:
    """The scripted server over streamable HTTP on loopback; restartable on the same port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc: Optional[subprocess.Popen] = None

    def start(self) -> "HttpServer":
        self.proc = subprocess.Popen([sys.executable, SERVER, "--http", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def accepting() -> bool:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return True
            except OSError:
                return False

        wait_for(accepting, 30, "the HTTP MCP server to listen")
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    srv = HttpServer().start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def start_mcp(hermes_home: Path) -> Iterator[Callable[..., Any]]:
    """start_mcp({name: entry}, report=None) -> the process's MCPManager (tools registered)."""
    from types import SimpleNamespace

    from tools.mcp.manager import shutdown_servers, start_servers

    def start(servers: dict, report: Optional[Callable[[str, str], None]] = None) -> Any:
        return start_servers(SimpleNamespace(mcp_servers=servers), report=report)

    try:
        yield start
    finally:
        shutdown_servers()


class Reports:
    """A `report` callback that keeps what it was told."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def __call__(self, kind: str, line: str) -> None:
        self.lines.append((kind, line))

    def matching(self, text: str, kind: Optional[str] = None) -> list[str]:
        return [ln for k, ln in self.lines if text in ln and (kind is None or k == kind)]
