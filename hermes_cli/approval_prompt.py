"""The approval question on the terminal: once / always / deny, and silence means deny.

Read straight from the terminal's file descriptor with a deadline, so an unattended agent never
waits forever on a dangerous command.
"""
from __future__ import annotations

import os
import select
import time
from typing import Optional

from hermes_cli.render import Renderer


def approval_timeout() -> float:
    """Seconds to wait for an approval answer (HERMES_APPROVAL_TIMEOUT, default 60)."""
    try:
        return max(0.1, float(os.environ.get("HERMES_APPROVAL_TIMEOUT", "60")))
    except ValueError:
        return 60.0


def parse_approval(answer: str) -> Optional[str]:
    a = answer.strip().lower()
    if a in ("o", "once", "y", "yes"):
        return "once"
    if a in ("a", "always"):
        return "always"
    if a in ("d", "deny", "n", "no"):
        return "deny"
    return None


def read_line(timeout: float, fd: int = 0) -> Optional[str]:
    """One line from `fd` within `timeout` seconds, else None (also None on end of input)."""
    deadline = time.monotonic() + timeout
    buf = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return None
        chunk = os.read(fd, 1024)
        if not chunk:
            return buf.decode(errors="replace") if buf else None
        buf += chunk
        if b"\n" in buf or b"\r" in buf:
            return buf.replace(b"\r", b"\n").split(b"\n", 1)[0].decode(errors="replace")


def ask_approval_tty(r: Renderer, command: str, reason: str,
                     timeout: Optional[float] = None) -> str:
    """Ask on the terminal; anything but a clear yes within the timeout is a deny."""
    timeout = approval_timeout() if timeout is None else timeout
    r.prompt_line("")
    r.emit(r.err, f"⚠ This needs your approval ({reason}):", "yellow")
    r.emit(r.err, f"    {command}", "bold")
    r.emit(r.err, "  always = this exact command, until the session ends", "dim")
    try:
        import termios

        termios.tcflush(0, termios.TCIFLUSH)  # keys typed during the turn are not an answer
    except (ImportError, OSError, ValueError):
        pass
    deadline = time.monotonic() + timeout
    while True:
        r.prompt_line("Allow? [o]nce / [a]lways / [d]eny: ")
        line = read_line(deadline - time.monotonic())
        if line is None:
            r.prompt_line("\n")
            r.emit(r.err, f"No answer within {timeout:g}s: denied.", "yellow")
            return "deny"
        answer = parse_approval(line)
        if answer:
            return answer
