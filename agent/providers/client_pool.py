"""Provider clients shared by the agents of one process, lent for one request at a time.

Why: an agent used to own its SDK client for its whole life, so every new session paid for a
client and a new connection (a TCP and TLS handshake to a remote provider), and every idle cached
agent kept a socket open (1,000 cached sessions, 1,000 sockets). Lending clients from a stack per
endpoint keeps the connections in use warm across sessions and holds none for idle ones. One
request per client at a time keeps ``AIAgent.interrupt()`` exact: cutting the borrowed client's
sockets cuts only that agent's request, and a client that may have been cut is closed instead of
lent again. Clients idle for longer than ``IDLE_SECONDS`` are closed (the most recently used are
lent first, so the stale ones sink).
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Any, Callable

log = logging.getLogger("hermes.providers")

IDLE_SECONDS = 60.0


def close_client(client: Any) -> None:
    """Close a provider client and the direct wire beside it (``direct_wire``)."""
    from agent.providers.direct_wire import wire_of

    wire = wire_of(client)
    if wire is not None:
        wire.close()
    close = getattr(client, "close", None)
    if callable(close):
        try:
            close()
        except Exception as exc:  # noqa: BLE001 - a client that will not close is dropped anyway
            log.debug("closing a provider client: %s", exc)


class ClientPool:
    """Idle clients of one endpoint, newest last; ``borrow`` makes one when none is idle."""

    def __init__(self, make: Callable[[], Any], idle_seconds: float = IDLE_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._make, self._idle_seconds, self._clock = make, idle_seconds, clock
        self._idle: deque[tuple[Any, float]] = deque()
        self._lock = threading.Lock()

    def borrow(self) -> Any:
        with self._lock:
            if self._idle:
                return self._idle.pop()[0]
        return self._make()

    def give_back(self, client: Any, reusable: bool = True) -> None:
        """Return a borrowed client; ``reusable=False`` (its request was cut) closes it."""
        if not reusable:
            close_client(client)
            return
        now = self._clock()
        stale = []
        with self._lock:
            self._idle.append((client, now))
            while self._idle and now - self._idle[0][1] > self._idle_seconds:
                stale.append(self._idle.popleft()[0])
        for old in stale:
            close_client(old)

    @property
    def idle(self) -> int:
        with self._lock:
            return len(self._idle)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = list(self._idle), deque()
        for client, _ in idle:
            close_client(client)


_POOLS: dict[tuple[Any, ...], ClientPool] = {}
_POOLS_LOCK = threading.Lock()


def keyed_pool(key: tuple[Any, ...], make: Callable[[], Any]) -> ClientPool:
    """The process's pool under ``key`` (a provider's name, endpoint, key...); ``make`` builds a
    client when none is idle."""
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = ClientPool(make)
        return pool


def pool_for(openai_cls: Any, base_url: Any, api_key: Any) -> ClientPool:
    """The process's pool for one OpenAI-compatible endpoint and key (and SDK class: tests
    patch it)."""
    from agent.providers.openai_compat import make_openai_client

    return keyed_pool((openai_cls, base_url, api_key),
                      lambda: make_openai_client(openai_cls, base_url, api_key))
