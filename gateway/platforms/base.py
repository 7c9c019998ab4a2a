"""The small interface every chat platform implements, so the runner never knows about any one of them.

An adapter turns platform traffic into ``MessageEvent``s handed to the runner's callback, and offers
the few outbound operations the runner needs (send, edit, typing). The API server is not an
adapter: it answers HTTP requests itself and calls the runner directly.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Optional


@dataclass
class MessageEvent:
    """One incoming chat message, platform-neutral."""

    platform: str
    chat_id: str
    user_id: str
    text: str
    chat_type: str = "dm"  # "dm" | "group" | "channel" | "thread"
    user_name: str = ""
    message_id: Optional[str] = None
    thread_id: Optional[str] = None
    raw: Any = field(default=None, repr=False)


MessageHandler = Callable[[MessageEvent], Awaitable[None]]


class PlatformAdapter(abc.ABC):
    """A chat platform connection. All methods run on the gateway's event loop."""

    #: short lowercase platform name, used in session keys and env names (TELEGRAM_ALLOWED_USERS)
    name: str = "base"
    #: longest text one message may carry; the runner splits longer replies
    max_message_length: int = 4096

    def __init__(self) -> None:
        self._handler: Optional[MessageHandler] = None

    def set_message_handler(self, handler: MessageHandler) -> None:
        self._handler = handler

    async def dispatch(self, event: MessageEvent) -> None:
        """Hand an incoming message to the runner; adapters call this, the runner must return fast."""
        if self._handler is not None:
            await self._handler(event)

    @abc.abstractmethod
    async def start(self) -> None:
        """Connect and begin delivering messages."""

    async def stop_receiving(self) -> None:
        """Stop taking new messages but keep sending (the runner drains running turns after this)."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Disconnect; messages already received keep being delivered until this returns."""

    @abc.abstractmethod
    async def send(self, chat_id: str, text: str, *, reply_to: Optional[str] = None,
                   thread_id: Optional[str] = None) -> Optional[str]:
        """Send one message (already within ``max_message_length``), into ``thread_id`` (a topic) when
        given; returns its id when known."""

    async def edit(self, chat_id: str, message_id: str, text: str) -> None:
        """Replace a sent message's text; platforms without edits may leave this a no-op."""

    async def typing(self, chat_id: str) -> None:
        """Show a short-lived 'typing…' indicator; the runner repeats it while a turn runs."""
