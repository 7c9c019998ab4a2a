"""What a backend is (``Backend``) and how it starts a background command (``Spawn``): the
types every backend and every user of one share."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Protocol


@dataclass
class Spawn:
    """How to start a background command locally: the command line, where, with what, and how to
    stop its remote side (None for the local backend: killing the process group is enough)."""

    argv: list[str]
    cwd: Optional[Path]
    env: dict[str, str]
    stop: Optional[Callable[[], None]] = None
    notes: list[str] = field(default_factory=list)


class Backend(Protocol):
    name: str  # "local", "ssh" or "docker"

    def describe(self) -> str:
        """Where this is, for messages ("this machine", "root@host:22", "container ...")."""

    def cwd(self, ctx: Any) -> str:
        """The working directory commands start in (remote backends keep a ``cd`` across calls;
        the local one is the context's working directory)."""

    def run(self, command: str, ctx: Any, timeout: Optional[int], workdir: Optional[str]) -> dict:
        """Run to completion within the terminal's bounds: {exit_code, output, ...}."""

    def spawn(self, command: str, ctx: Any, workdir: Optional[str]) -> Spawn:
        """The local command line that runs ``command`` in the background."""

    def stat(self, path: str) -> Optional[str]:
        """"file", "dir" or None for a path on the backend."""

    def read_bytes(self, path: str, limit: int) -> bytes:
        """At most ``limit`` bytes of a file on the backend (OSError when it cannot)."""

    def write_bytes(self, path: str, data: bytes) -> None:
        """Create or replace a file on the backend, parent directories included."""

    def home(self) -> str:
        """The home directory on the backend (where ``~`` points)."""

    def close(self) -> None:
        """Release the connection or container."""
