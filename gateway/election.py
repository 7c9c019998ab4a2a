"""One poller per bot across gateway workers: the worker holding a store advisory lock polls.

Why: Telegram allows one ``getUpdates`` consumer per bot token (a second one gets 409 Conflict and
both lose updates), but every worker must be able to send (replies, cron deliveries). So on a shared
store (PostgreSQL) each worker connects its adapter for sending and campaigns for
``advisory_lock("<platform>-poller", wait=0)``: the winner starts polling and keeps the lock (on a
connection of its own) until it stops receiving; the others retry every ``interval`` seconds. A
SIGKILLed poller's connection drops, PostgreSQL releases its lock, and the next retry elsewhere
wins: polling moves to another worker without anyone deciding that the old one is dead.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, ContextManager, Optional

from gateway.platforms.base import MessageHandler, PlatformAdapter

log = logging.getLogger("gateway.election")

DEFAULT_INTERVAL = 5.0  # seconds between a standby worker's attempts to become the poller


class ElectedPoller(PlatformAdapter):
    """Wraps an adapter with ``connect()`` (sending only) and ``start_polling()``; polls only while
    this worker holds the lock. ``role`` is ``polling``, ``standby`` or ``stopped``."""

    def __init__(self, inner: Any, db: Any, interval: float = DEFAULT_INTERVAL) -> None:
        super().__init__()
        self.inner, self.db, self.interval = inner, db, interval
        self.name = inner.name
        self.max_message_length = inner.max_message_length
        self.lock_name = f"{inner.name}-poller"
        self.role = "standby"
        self._held: Optional[ContextManager[bool]] = None
        self._stopping = asyncio.Event()
        self._task: Optional[asyncio.Task[None]] = None

    def set_message_handler(self, handler: MessageHandler) -> None:
        self.inner.set_message_handler(handler)

    async def start(self) -> None:
        await self.inner.connect()
        self._task = asyncio.ensure_future(self._campaign())

    async def _campaign(self) -> None:
        while not self._stopping.is_set():
            held = self.db.advisory_lock(self.lock_name, wait=0)
            try:
                got = await asyncio.to_thread(held.__enter__)
            except Exception as exc:  # the store is unreachable: try again later
                log.warning("%s: could not ask for the poller lock: %s", self.name, exc)
                got = False
            else:
                if got and not self._stopping.is_set():
                    try:
                        await self.inner.start_polling()
                    except Exception as exc:
                        log.warning("%s: polling did not start: %s", self.name, exc)
                    else:
                        self._held, self.role = held, "polling"
                        log.info("%s: this worker is the poller now", self.name)
                        return
                await asyncio.to_thread(held.__exit__, None, None, None)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.interval)

    async def stop_receiving(self) -> None:
        """Stop polling (or campaigning) and give the lock back so another worker may take over."""
        self._stopping.set()
        task, self._task = self._task, None
        if task is not None:
            with contextlib.suppress(Exception):
                await task  # wakes at once: a lock attempt is quick (wait=0)
        await self.inner.stop_receiving()
        held, self._held = self._held, None
        if held is not None:
            with contextlib.suppress(Exception):  # a dropped connection released it already
                await asyncio.to_thread(held.__exit__, None, None, None)
        self.role = "stopped"

    async def stop(self) -> None:
        await self.stop_receiving()
        await self.inner.stop()

    async def send(self, chat_id: str, text: str, *, reply_to: Optional[str] = None,
                   thread_id: Optional[str] = None) -> Optional[str]:
        return await self.inner.send(chat_id, text, reply_to=reply_to, thread_id=thread_id)

    async def edit(self, chat_id: str, message_id: str, text: str) -> None:
        await self.inner.edit(chat_id, message_id, text)

    async def typing(self, chat_id: str, thread_id: Optional[str] = None) -> None:
        if thread_id is None:  # a plugin's typing(chat_id) is called as it was
            await self.inner.typing(chat_id)
        else:
            await self.inner.typing(chat_id, thread_id)
