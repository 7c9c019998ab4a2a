"""The small interface every chat platform implements, so the runner never knows about any one of
them.

An adapter turns platform traffic into ``MessageEvent``s handed to the runner's callback, and offers
the few outbound operations the runner needs (send, send_file, edit, typing). The API server is not
an adapter: it answers HTTP requests itself and calls the runner directly.

Media (issue 24): an adapter downloads what a message carries (within ``MAX_ATTACHMENT_BYTES``)
into ``Attachment``s of kind ``image``, ``voice`` (a voice note or audio) or ``file``; the runner
turns them into the turn's content (``gateway.media``). Group messages that do not address the
bot (no mention, not a reply to it) never reach ``dispatch``: each adapter knows how its platform
mentions. Threads: ``thread_id`` names the thread (a Slack ``thread_ts``, a Discord thread
channel, a Matrix thread root, an email thread's first Message-ID); replies go back into it.
"""
from __future__ import annotations

import abc
import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Optional, Sequence

MAX_ATTACHMENT_BYTES = 20 << 20  # larger files are not downloaded; the message says so


async def end_task(task: Optional["asyncio.Task[Any]"]) -> None:
    """Cancel a receive loop (or any background task) and wait until it has ended, whatever it
    raised: stopping a platform must never fail on the way its loop ended."""
    import asyncio  # here, not at the top: every new agent loads the platform plugins (~16 ms)

    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


@dataclass
class Attachment:
    """One file a message carried, already downloaded (``data``), or only named when it was too
    large or could not be fetched (``error`` says why)."""

    kind: str  # "image" | "voice" | "file"
    name: str
    mime: str = ""
    data: bytes = field(default=b"", repr=False)
    error: Optional[str] = None


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
    attachments: list[Attachment] = field(default_factory=list)
    #: where this message's answers go instead of ``adapter.send`` (text of any length; it
    #: splits): a Discord slash command's interaction follow-up
    respond: Optional[Callable[[str], Awaitable[None]]] = field(default=None, repr=False)


MessageHandler = Callable[[MessageEvent], Awaitable[None]]


class PlatformAdapter(abc.ABC):
    """A chat platform connection. All methods run on the gateway's event loop."""

    #: short lowercase platform name, used in session keys and env names (TELEGRAM_ALLOWED_USERS)
    name: str = "base"
    #: longest text one message may carry; the runner splits longer replies
    max_message_length: int = 4096

    def __init__(self) -> None:
        self._handler: Optional[MessageHandler] = None
        self._allowed: Callable[[str], bool] = lambda _user: False

    def set_message_handler(self, handler: MessageHandler) -> None:
        self._handler = handler

    def set_access_check(self, allowed: Callable[[str], bool]) -> None:
        """The gateway's access rule for this platform's users (``AccessControl.is_allowed``),
        for decisions an adapter takes before any message (accepting a Matrix invite). Blocking:
        call it through ``asyncio.to_thread``."""
        self._allowed = allowed

    def user_allowed(self, user_id: str) -> bool:
        return self._allowed(user_id)

    async def dispatch(self, event: MessageEvent) -> None:
        """Hand an incoming message to the runner; adapters call this, the runner must return
        fast."""
        if self._handler is not None:
            await self._handler(event)

    @abc.abstractmethod
    async def start(self) -> None:
        """Connect and begin delivering messages."""

    async def stop_receiving(self) -> None:
        """Stop taking new messages but keep sending (the runner drains running turns after
        this)."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Disconnect; messages already received keep being delivered until this returns."""

    @abc.abstractmethod
    async def send(self, chat_id: str, text: str, *, reply_to: Optional[str] = None,
                   thread_id: Optional[str] = None) -> Optional[str]:
        """Send one message (already within ``max_message_length``), into ``thread_id`` (a topic)
        when given; returns its id when known."""

    async def send_file(self, chat_id: str, path: Path, *, caption: str = "",
                        thread_id: Optional[str] = None) -> Optional[str]:
        """Send a file (an image is shown as one where the platform can); platforms without
        uploads send a line naming it."""
        return await self.send(chat_id, f"{caption}\n[file: {path.name}]".strip(),
                               thread_id=thread_id)

    async def deliver(self, chat_id: str, text: str, files: Sequence[Path] = (), *,
                      thread_id: Optional[str] = None) -> bool:
        """An answer: ``text`` split to ``max_message_length``, then each file. False when the
        platform refused a piece. Platforms where one message carries it all (email) override."""
        from gateway.platforms.splitting import split_message

        ok = True
        if text.strip():
            for piece in split_message(text, self.max_message_length):
                ok = await self.send(chat_id, piece, thread_id=thread_id) is not None and ok
        for path in files:
            ok = await self.send_file(chat_id, Path(path), thread_id=thread_id) is not None and ok
        return ok

    async def edit(self, chat_id: str, message_id: str, text: str) -> None:
        """Replace a sent message's text; platforms without edits may leave this a no-op."""

    async def typing(self, chat_id: str, thread_id: Optional[str] = None) -> None:
        """Show a short-lived 'typing…' indicator; the runner repeats it while a turn runs.
        ``thread_id``: the thread (topic) the answer will go to, where the platform has them."""
