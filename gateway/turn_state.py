"""The runner's runtime state, kept apart from its logic: a turn request, a session's state, the
turn handle callers hold, and the per-key FIFO locks."""
from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Optional

from gateway.reactions import TurnOutcome

if TYPE_CHECKING:  # pragma: no cover
    from gateway.runner import GatewayRunner


@dataclass
class TurnRequest:
    text: Any  # a string, or content parts (text + images)
    key: Optional[str] = None  # None: a stateless API request
    user_id: Optional[str] = None
    system_message: Optional[str] = None
    conversation_history: Optional[list[dict[str, Any]]] = None
    stream_callback: Optional[Callable[[str], None]] = None
    tool_callback: Optional[Callable[[dict[str, Any]], None]] = None
    started: bool = False
    done: bool = False
    stop_requested: bool = False  # /stop, a newer message (busy policy) or a client that went away
    stop_message: Optional[str] = None
    stop_notice: bool = False  # tell the chat when the stop landed before the turn started
    state: Optional["SessionState"] = None  # the session it runs in, once started
    abandoned: bool = False  # persisted by the drain instead of run
    persist_only: bool = False  # received while draining: stored in order, not answered
    mark: int = 0  # store position before the turn (see SessionMap.ensure_user_message)
    # tells the chat about warnings mid-turn
    notify: Optional[Callable[[str], Awaitable[None]]] = None
    origin: Optional[dict[str, Any]] = None  # the chat it came from: {platform, chat_id, thread_id}
    # who answers the turn's approval questions (API runs); None: they are denied
    approval_callback: Optional[Callable[[str, str], str]] = None
    attachments: list[Any] = field(default_factory=list)  # a chat message's media (gateway.media)


class SessionState:
    """Runtime state of one session id."""

    def __init__(self, sid: str, platform: str = "api_server") -> None:
        self.sid = sid
        self.platform = platform
        self.lock = asyncio.Lock()
        self.agent: Any = None
        self.running: Optional[TurnRequest] = None
        self.holders = 0  # waiting for or holding the lock; a held state is never evicted
        self.moved_to: Optional[str] = None  # rotated: its keys now lead to this session
        self.deleted = False  # deleted through the API: its keys lead to a fresh session
        # a throwaway turn's private in-memory store (nothing reaches state.db)
        self.store: Any = None
        # the cross-process turn lease while the lock's holder has it (gateway.lease)
        self.lease: Any = None
        self.fence: Any = None  # what the turn's writes prove while the lease is held
        # store position when our last turn ended (shared stores)
        self.seen_mark: Optional[int] = None
        self.taken_mark: Optional[int] = None  # store position when the lease was taken
        self.last_used = time.monotonic()


class SessionBusy(Exception):
    """The session is running (or about to run) a turn, so it cannot be deleted now."""


STOPPED_BEFORE_START = ("Stopped before it started: your message is kept in the conversation but "
                        "was not answered.")
REARM_SECONDS = 0.05


class TurnHandle:
    """A submitted turn: ``await outcome()`` for its result; ``stop()`` interrupts it, or keeps it
    from starting when it has not started yet (e.g. the HTTP client went away)."""

    def __init__(self, runner: "GatewayRunner", req: TurnRequest,
                 task: "asyncio.Task[TurnOutcome]") -> None:
        self._runner, self._req, self.task = runner, req, task

    def outcome(self) -> "asyncio.Future[TurnOutcome]":
        """A shielded future of the turn's outcome (await it, or wait on it as is: no task of its
        own per streamed turn)."""
        return asyncio.shield(self.task)

    def stop(self, message: Optional[str] = None) -> bool:
        return self._runner.stop_request(self._req, message)


class KeyLocks:
    """One FIFO lock per key, alive only while someone waits for or holds it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.setdefault(key, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                self._locks.pop(key, None)
