"""The embedded model's pipe: one JSON object per line over a Unix socket pair.

Why a socket pair and not stdin/stdout: llama.cpp and Python both like to print to the standard
streams; a descriptor of its own keeps the protocol clean, and a closed peer is seen at once as
end-of-file (the child exits when its parent dies, the parent sees a dead child). Reads take a
timeout so a child that hangs is noticed.
"""
from __future__ import annotations

import json
import socket
import threading
from typing import Any, Optional


class PeerGone(Exception):
    """The other end closed the pipe (it exited, or was killed)."""


class Silent(Exception):
    """Nothing arrived within the timeout."""


class Pipe:
    """Line-framed JSON messages over one end of a socket pair."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buf = bytearray()
        self._send_lock = threading.Lock()  # a cancel may be sent while a request is

    def send(self, msg: dict) -> None:
        data = json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"
        try:
            with self._send_lock:
                self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            raise PeerGone(str(exc)) from exc

    def recv(self, timeout: Optional[float] = None) -> dict:
        """The next message; ``Silent`` after ``timeout`` seconds without one, ``PeerGone`` at
        EOF."""
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[:nl + 1]
                return _decode(line)
            self.sock.settimeout(timeout)
            try:
                data = self.sock.recv(1 << 16)
            except socket.timeout as exc:
                raise Silent() from exc
            except (ConnectionResetError, OSError) as exc:
                raise PeerGone(str(exc)) from exc
            if not data:
                raise PeerGone("end of file")
            self._buf += data

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def _decode(line: bytes) -> dict:
    try:
        msg: Any = json.loads(line)
    except ValueError as exc:
        raise PeerGone(f"unreadable message ({exc})") from exc
    if not isinstance(msg, dict):
        raise PeerGone("unreadable message (not an object)")
    return msg
