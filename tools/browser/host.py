"""The process's browser thread: one asyncio loop that owns Playwright and every browser.

Tool handlers run in the agent's worker threads (several at once, in the gateway on many
sessions), while Playwright objects belong to the loop that made them. So every browser call is
a coroutine submitted to this one loop (``run``), started on first use and stopped at exit.
"""
from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import threading
from typing import Any, Awaitable, Callable, Optional, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


class BrowserHost:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._playwright: Any = None
        self._pw_lock: Optional[asyncio.Lock] = None
        self.on_stop: list[Callable[[], Awaitable[None]]] = []  # run in the loop at shutdown

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                ready = threading.Event()
                loop = asyncio.new_event_loop()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    ready.set()
                    loop.run_forever()

                self._thread = threading.Thread(target=serve, name="hermes-browser", daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
                atexit.register(self.shutdown)
            return self._loop

    def run(self, make: Callable[[], Awaitable[T]], timeout: float) -> T:
        """Run ``make()`` in the browser loop and wait for it (TimeoutError after ``timeout``)."""
        future = asyncio.run_coroutine_threadsafe(_call(make), self.loop())
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"the browser did not answer within {timeout:g} s") from None

    async def playwright(self) -> Any:
        """The process's Playwright driver (started on first use, inside the loop)."""
        if self._pw_lock is None:
            self._pw_lock = asyncio.Lock()
        async with self._pw_lock:
            if self._playwright is None:
                from playwright.async_api import async_playwright

                self._playwright = await async_playwright().start()
            return self._playwright

    def shutdown(self, timeout: float = 10.0) -> None:
        """Close every browser and the driver; the loop stops (idempotent)."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is None:
            return

        async def stop() -> None:
            for fn in list(self.on_stop):
                try:
                    await fn()
                except Exception as exc:  # closing must go on for the others
                    log.debug("browser shutdown step failed: %s", exc)
            if self._playwright is not None:
                try:
                    await self._playwright.stop()
                except Exception as exc:
                    log.debug("stopping playwright: %s", exc)
                self._playwright = None

        try:
            asyncio.run_coroutine_threadsafe(stop(), loop).result(timeout)
        except Exception as exc:
            log.debug("browser shutdown: %s", exc)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout)


async def _call(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


HOST = BrowserHost()
