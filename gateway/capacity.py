"""How many turns one gateway process takes at once, and the gauge that counts them.

Why: a turn is mostly a thread blocked on the provider's answer, which is cheap (a few hundred KB
with its agent; ``bench/gateway_load.py --sessions 1000 --delay 5`` prints the figure), so the
process runs every accepted turn at once instead of queueing them behind a small thread pool (with
128 threads, 1,000 sessions behind a 5 s provider got 17% of the ideal rate, every turn waiting
~35 s). What does run out is memory and file descriptors, so the limit is derived from those: past
it a new turn is refused politely (429 with ``Retry-After`` on the API, a short reply in chats)
instead of the process growing until the kernel kills it with every conversation in it.

Pure decisions (``derive_turn_limit``, ``retry_after``) are separate from reading the machine
(``machine_limits``) and from the counting (``TurnGauge``, used on the event loop and turn threads).
"""
from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Optional

from hermes_core.gateway_config import GatewayConfig

PER_TURN_BYTES = 2 << 20  # budget per accepted turn: ~6x what one costs, for long histories
MEMORY_SHARE = 0.5  # of the memory available at start-up; the rest: the OS's, the store's, agents'
FDS_PER_TURN = 3  # the client's socket, the provider's, and slack for a tool's file or pipe
FD_RESERVE = 256  # the store, logs, listening sockets, platform pollers
MIN_LIMIT, MAX_LIMIT = 16, 10_000
BUSY_CHAT_REPLY = ("I'm handling too many conversations right now and could not take this message. "
                   "Please send it again in a minute.")


class TurnLimitReached(Exception):
    """A new turn was refused: the process holds ``limit`` turns already. Retry after
    ``retry_after`` s."""

    def __init__(self, limit: int, retry_after: int) -> None:
        super().__init__(f"The gateway is at its limit of {limit} turns at once; retry in "
                         f"{retry_after} s.")
        self.limit, self.retry_after = limit, retry_after


@dataclass(frozen=True)
class MachineLimits:
    available_bytes: Optional[int]  # memory this process may still use (None: unknown)
    open_files: Optional[int]  # RLIMIT_NOFILE soft limit (None: unlimited)
    threads: Optional[int]  # RLIMIT_NPROC soft limit (None: unlimited)


def derive_turn_limit(limits: MachineLimits) -> int:
    """Turns one process may hold at once: what half the available memory pays for at
    ``PER_TURN_BYTES`` each, bounded by file descriptors and the thread limit."""
    bounds = [MAX_LIMIT]
    if limits.available_bytes is not None:
        bounds.append(int(limits.available_bytes * MEMORY_SHARE // PER_TURN_BYTES))
    if limits.open_files is not None:
        bounds.append((limits.open_files - FD_RESERVE) // FDS_PER_TURN)
    if limits.threads is not None:
        bounds.append(limits.threads // 2)  # the limit counts every thread of this user
    return max(MIN_LIMIT, min(bounds))


def retry_after(mean_turn_seconds: Optional[float]) -> int:
    """Seconds a refused client should wait: about one turn's length, 1..60."""
    if not mean_turn_seconds or mean_turn_seconds <= 0:
        return 5
    return max(1, min(60, math.ceil(mean_turn_seconds)))


def _meminfo_available(text: str) -> Optional[int]:
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


def _cgroup_room() -> Optional[int]:
    """Bytes left under a cgroup v2 memory limit (containers), None when there is none."""
    try:
        raw = open("/sys/fs/cgroup/memory.max", encoding="ascii").read().strip()
        if raw == "max":
            return None
        used = int(open("/sys/fs/cgroup/memory.current", encoding="ascii").read().strip())
        return max(0, int(raw) - used)
    except (OSError, ValueError):
        return None


def machine_limits() -> MachineLimits:
    """Read this machine's (and container's) limits; anything unreadable counts as unknown."""
    import resource

    available: Optional[int] = None
    try:
        available = _meminfo_available(open("/proc/meminfo", encoding="ascii").read())
    except (OSError, ValueError):
        pass
    room = _cgroup_room()
    if room is not None:
        available = room if available is None else min(available, room)

    def soft(which: int) -> Optional[int]:
        value = resource.getrlimit(which)[0]
        return None if value == resource.RLIM_INFINITY else int(value)

    return MachineLimits(available, soft(resource.RLIMIT_NOFILE), soft(resource.RLIMIT_NPROC))


def raise_open_files_limit() -> Optional[int]:
    """Lift the soft open-files limit to the hard one (often 1,024 vs 500,000+): 1,000 turns need
    2,000+ sockets. Returns the soft limit now in force (None when unlimited)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or hard > soft):
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return None if soft == resource.RLIM_INFINITY else int(soft)


class TurnGauge:
    """Counts turns: ``accepted`` from admission until done, ``running`` while inside the agent.
    ``queued`` is the difference (waiting for the session's previous turn, the agent, or a thread).
    ``admit``/``release`` run on the event loop; ``started``/``finished`` on turn threads."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.accepted = 0
        self.running = 0
        self.peak_running = 0
        self.refused = 0
        self._mean: Optional[float] = None  # moving mean of turn durations (seconds)
        self._lock = threading.Lock()

    def admit(self) -> None:
        """Count a new turn in, or raise ``TurnLimitReached``."""
        with self._lock:
            if self.accepted >= self.limit:
                self.refused += 1
                raise TurnLimitReached(self.limit, retry_after(self._mean))
            self.accepted += 1

    def release(self, _: Any = None) -> None:
        """The admitted turn is over (usable as a task's done callback)."""
        with self._lock:
            self.accepted -= 1

    def started(self) -> float:
        with self._lock:
            self.running += 1
            self.peak_running = max(self.peak_running, self.running)
        return time.monotonic()

    def finished(self, since: float) -> None:
        took = time.monotonic() - since
        with self._lock:
            self.running -= 1
            self._mean = took if self._mean is None else 0.9 * self._mean + 0.1 * took

    def snapshot(self) -> dict[str, Any]:
        """What ``/health/detailed`` and ``hermes gateway status`` report."""
        with self._lock:
            return {"in_flight": self.running, "queued": max(0, self.accepted - self.running),
                    "accepted": self.accepted, "limit": self.limit,
                    "peak_in_flight": self.peak_running, "refused": self.refused,
                    "mean_turn_seconds": None if self._mean is None else round(self._mean, 3)}


@dataclass(frozen=True)
class TurnSettings:
    limit: int  # turns accepted at once (running or queued); past it new ones are refused
    threads: int  # turn threads (more than ``limit`` would never be used)
    source: str  # where ``limit`` came from, for the log and the status


def turn_settings(gw: GatewayConfig) -> TurnSettings:
    """``gateway.turn_limit`` (default: derived from this machine) and
    ``gateway.max_concurrent_turns`` (threads; default: as many as the limit, so an accepted turn
    never waits for a thread). Both are checked when config.yaml is read."""
    limit, source = gw.turn_limit, "gateway.turn_limit"
    if limit is None:
        limit = derive_turn_limit(machine_limits())
        source = "derived from memory and open-file limits"
    threads = gw.max_concurrent_turns or limit
    return TurnSettings(limit, min(threads, limit), source)


def rss_bytes(pid: Optional[int] = None) -> Optional[int]:
    """Resident memory of a process (this one by default), for reports."""
    try:
        text = open(f"/proc/{pid or os.getpid()}/status", encoding="ascii").read()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return None
