"""Idle connections cannot take the gateway down (issue 20 item 4): a real `hermes gateway run`
subprocess with its descriptor limit lowered to 256, flooded with connections that never send a
byte. It used to hit EMFILE, fail writing gateway.json and exit (logging a traceback per retry).
Now a connection cap under the limit (the oldest idle connection makes room), short idle
timeouts and a status writer that never raises keep it up and answering /health."""
from __future__ import annotations

import json
import resource
import socket
import time
import urllib.request

from tests.waiting import wait_until

LIMIT = 256
FLOOD = 400  # more connections than the process has descriptors


def _limit_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


def _health(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as resp:
        return resp.status


def _open_idle(port: int, n: int) -> list[socket.socket]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.settimeout(5)
        try:
            s.connect(("127.0.0.1", port))
        except OSError:
            s.close()
            continue
        socks.append(s)
    return socks


def test_a_flood_of_idle_connections_leaves_the_gateway_up(gateway_process, hermes_home):
    gw = gateway_process(preexec_fn=_limit_files)
    status_file = hermes_home / "gateway.json"
    socks = _open_idle(gw.port, FLOOD)
    try:
        assert len(socks) >= LIMIT  # the kernel's backlog takes them all; the gateway holds fewer
        before = json.loads(status_file.read_text())["updated_at"]
        assert wait_until(lambda: _try_health(gw.port), timeout=60, what="/health during the flood")
        socks += _open_idle(gw.port, 100)  # still coming
        assert _health(gw.port) == 200
        wait_until(lambda: json.loads(status_file.read_text())["updated_at"] > before, timeout=30,
                   what="gateway.json refreshed during the flood")
        assert gw.proc.poll() is None
    finally:
        for s in socks:
            s.close()
    assert _health(gw.port) == 200 and gw.proc.poll() is None
    assert gw.terminate_and_wait() == 0
    log = (hermes_home / "logs" / "gateway.log").read_text()
    assert len(log.splitlines()) < 100 and "Traceback" not in log
    assert "Too many open files" not in log  # the cap kept descriptors for everything else


def _try_health(port: int) -> bool:
    try:
        return _health(port) == 200
    except OSError:
        time.sleep(0.2)
        return False


def test_connection_cap_and_idle_timeout_decisions():
    from gateway.platforms.api_server.connections import connection_cap

    assert connection_cap(256) < 256 and connection_cap(256) >= 64
    assert connection_cap(1024) <= 1024 - 64
    assert connection_cap(None) == connection_cap(1 << 20) == 10_000  # unlimited: the default cap
    assert connection_cap(256, configured=100) == 100
    assert connection_cap(256, configured=5000) == connection_cap(256)  # never past the limit


def test_a_connection_that_never_sends_a_request_is_closed_after_the_idle_timeout(
        gateway_process, hermes_home):
    (hermes_home / "config.yaml").write_text("gateway:\n  api_server:\n    idle_timeout: 1\n")
    gw = gateway_process()
    with socket.create_connection(("127.0.0.1", gw.port), timeout=30) as silent, \
            socket.create_connection(("127.0.0.1", gw.port), timeout=30) as slow:
        slow.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # headers never finished
        assert silent.recv(1) == b"" and slow.recv(1) == b""  # closed by the server, not by us
    assert _health(gw.port) == 200
