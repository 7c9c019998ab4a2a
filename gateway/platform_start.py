"""Each chat platform starts on its own: one that cannot connect is retried with backoff in the
background while the others (and the API server) serve.

Why: a Telegram that is unreachable at boot (no network yet, DNS down, a wrong base URL) used to
abort the whole gateway with a traceback. Now the first attempt is made at start-up (so a working
platform is connected when READY is printed), a failure is logged naming the platform, and later
attempts follow ``hermes_core.retry.jittered_backoff``. ``snapshot()`` is what ``gateway.json`` (and
so ``hermes gateway status``) shows per platform.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from gateway.platforms.base import end_task
from hermes_core.retry import jittered_backoff

log = logging.getLogger("gateway.platforms")

START_TIMEOUT = 30.0  # an attempt may take this long (a blackholed host) before it counts as failed
RETRY_BASE, RETRY_CAP = 1.0, 60.0  # seconds: the first retry after about a second, then doubling


def failure_text(exc: BaseException) -> str:
    """One line for the log and the status: the error's kind and message."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass
class PlatformState:
    name: str
    state: str = "starting"  # starting | connected | retrying | stopped
    attempts: int = 0
    error: Optional[str] = None
    next_try_at: Optional[float] = None  # time.time() of the next attempt while retrying
    connected_at: Optional[float] = None
    task: Optional["asyncio.Task[None]"] = field(default=None, repr=False)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.state, "attempts": self.attempts}
        if self.error and self.state != "connected":
            out["error"] = self.error
        if self.next_try_at is not None and self.state == "retrying":
            out["next_try_in"] = max(0.0, round(self.next_try_at - time.time(), 1))
        return out


class PlatformStarter:
    """Starts adapters independently; ``stop()`` ends the retries (the runner stops adapters)."""

    def __init__(self, adapters: list[Any],
                 backoff: Optional[Callable[[int], float]] = None) -> None:
        self.adapters = list(adapters)
        self.backoff = backoff or (lambda n: jittered_backoff(n, base=RETRY_BASE, cap=RETRY_CAP))
        self.states = {a.name: PlatformState(a.name) for a in self.adapters}
        self._stopping = asyncio.Event()

    async def start(self) -> None:
        """One attempt each, side by side; those that failed go on retrying in the background."""
        results = await asyncio.gather(*(self._attempt(a) for a in self.adapters))
        for adapter, ok in zip(self.adapters, results):
            if not ok:
                st = self.states[adapter.name]
                st.task = asyncio.ensure_future(self._retry(adapter))

    async def _attempt(self, adapter: Any) -> bool:
        st = self.states[adapter.name]
        st.attempts += 1
        try:
            await asyncio.wait_for(adapter.start(), START_TIMEOUT)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of one platform stays its own
            st.error = failure_text(exc)
            with contextlib.suppress(Exception):
                await adapter.stop()  # what the failed attempt set up (an HTTP client, …)
            return False
        st.state, st.error, st.next_try_at, st.connected_at = "connected", None, None, time.time()
        log.info("platform %s started%s", adapter.name,
                 f" (after {st.attempts} attempts)" if st.attempts > 1 else "")
        return True

    async def _retry(self, adapter: Any) -> None:
        st = self.states[adapter.name]
        while not self._stopping.is_set():
            delay = self.backoff(st.attempts)
            st.state, st.next_try_at = "retrying", time.time() + delay
            log.warning("platform %s failed to start (attempt %d): %s; the others keep serving, "
                        "retrying in %.0fs", adapter.name, st.attempts, st.error, delay)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), delay)
            if self._stopping.is_set() or await self._attempt(adapter):
                return

    def snapshot(self) -> dict[str, dict[str, Any]]:
        return {name: st.as_dict() for name, st in self.states.items()}

    def connected(self, name: str) -> bool:
        st = self.states.get(name)
        return st is not None and st.state == "connected"

    async def stop(self) -> None:
        self._stopping.set()
        for st in self.states.values():
            await end_task(st.task)
            if st.state != "connected":
                st.state = "stopped"
