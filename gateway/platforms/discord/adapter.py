"""Discord through discord.py: the client keeps the Gateway WebSocket (it resumes by itself
after a drop) and hands messages to the runner: every DM, and in servers only the messages
that mention the bot. A message in a thread is a session of its own (keyed by the thread under
its channel) and is answered in that thread. Answers go out split at Discord's 2,000
characters, files as uploads, with the typing indicator while a turn runs; a send that fails
while Discord is away is retried. Our chat commands are also slash commands
(``discord.slash``): registered on start, each interaction deferred and then followed up with
the command's answer, under the same access rules as a typed message.

discord.py reads its REST and Gateway addresses from class attributes (``Route.BASE``,
``DiscordWebSocket.DEFAULT_GATEWAY``); ``api_url``/``gateway_url`` set them for this process.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from pathlib import Path
from typing import Any, Optional

from gateway.platforms.base import MAX_ATTACHMENT_BYTES, Attachment, MessageEvent, PlatformAdapter
from gateway.platforms.retrying import Permanent, retrying
from gateway.platforms.splitting import split_message

log = logging.getLogger("gateway.discord")

READY_TIMEOUT = 60.0


def kind_of(mime: str) -> str:
    return "image" if mime.startswith("image/") else "voice" if mime.startswith("audio/") \
        else "file"


def strip_mention(text: str, bot_id: int) -> str:
    return re.sub(rf"<@!?{bot_id}>", "", text).strip()


def place(channel: Any, channel_id: int, direct: bool) -> tuple[str, str, Optional[str]]:
    """(chat id, chat type, thread id) of a message or command: a thread is keyed under its
    parent channel, so each thread is a session of its own."""
    import discord

    if direct:
        return str(channel_id), "dm", None
    if isinstance(channel, discord.Thread):
        return str(channel.parent_id), "thread", str(channel.id)
    return str(channel_id), "group", None


class DiscordAdapter(PlatformAdapter):
    name = "discord"
    max_message_length = 2_000

    def __init__(self, token: str, *, api_url: str = "", gateway_url: str = "") -> None:
        super().__init__()
        self._token, self.api_url, self.gateway_url = token, api_url, gateway_url
        self._client: Any = None
        self._tree: Any = None
        self._task: Optional[asyncio.Task[None]] = None
        self._ready = asyncio.Event()

    def _point_at_server(self) -> None:
        import discord.gateway
        import discord.http
        import yarl

        if self.api_url:
            discord.http.Route.BASE = self.api_url.rstrip("/")
        if self.gateway_url:
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self.gateway_url)

    async def connect(self) -> None:
        """Log in over REST (a wrong token fails here, saying so)."""
        import discord

        self._point_at_server()
        intents = discord.Intents.default()
        intents.message_content = True
        self._client = discord.Client(intents=intents)
        self._client.event(self.on_ready)
        self._client.event(self.on_message)
        from gateway.platforms.discord.slash import command_tree

        self._tree = command_tree(self._client, self.on_command)
        try:
            await self._client.login(self._token)
        except discord.LoginFailure:
            raise RuntimeError("Discord refused the bot token (DISCORD_BOT_TOKEN)") from None

    async def start(self) -> None:
        await self.connect()
        await self._register_commands()
        self._task = asyncio.ensure_future(self._client.connect(reconnect=True))
        ready = asyncio.ensure_future(self._ready.wait())
        await asyncio.wait({ready, self._task}, timeout=READY_TIMEOUT,
                           return_when=asyncio.FIRST_COMPLETED)
        if not self._ready.is_set():
            ready.cancel()
            if self._task.done() and self._task.exception() is not None:
                raise RuntimeError(f"Discord gateway: {self._task.exception()}")
            raise RuntimeError("Discord gateway did not get ready in time")
        log.info("discord: connected as %s", self._client.user)

    async def _register_commands(self) -> None:
        """The slash commands; without them (no ``applications.commands`` scope) typed
        /commands still work, so a refusal is only a warning."""
        import discord

        try:
            await self._tree.sync()
        except discord.HTTPException as exc:
            log.warning("discord: the slash commands could not be registered (%s %s); typed "
                        "/commands still work. Re-invite the bot with the "
                        "applications.commands scope.", exc.status, exc.text)

    async def stop_receiving(self) -> None:
        """Nothing yet: closing the Gateway closes the HTTP session too, and the turns being
        drained still answer through it (Discord never redelivers a message, so what arrives
        meanwhile is better stored by the runner than dropped)."""

    async def stop(self) -> None:
        client = self._client
        if client is not None and not client.is_closed():
            with contextlib.suppress(Exception):
                await client.close()
        task, self._task = self._task, None
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 10)

    # -- in ---------------------------------------------------------------------------------------
    async def on_ready(self) -> None:
        self._ready.set()

    async def on_message(self, message: Any) -> None:
        import discord

        me = self._client.user
        if message.author.bot or me is None or message.author.id == me.id:
            return
        direct = isinstance(message.channel, discord.DMChannel)
        if not direct and not any(u.id == me.id for u in message.mentions):
            return  # server chatter that does not address the bot
        chat_id, chat_type, thread_id = place(message.channel, message.channel.id, direct)
        attachments = [await self._download(a) for a in message.attachments]
        await self.dispatch(MessageEvent(
            platform=self.name, chat_id=chat_id, user_id=str(message.author.id),
            text=strip_mention(message.content, me.id), chat_type=chat_type,
            user_name=str(message.author.name), message_id=str(message.id), raw=None,
            thread_id=thread_id, attachments=attachments))

    async def on_command(self, interaction: Any, text: str) -> None:
        """A slash command: deferred now, answered by follow-ups (``event.respond``)."""
        await interaction.response.defer(thinking=True)
        answered = False

        async def respond(answer: str) -> None:
            nonlocal answered
            answered = True
            for piece in split_message(answer, self.max_message_length):
                await interaction.followup.send(piece)

        user = str(interaction.user.id)
        chat_id, chat_type, thread_id = place(interaction.channel, interaction.channel_id,
                                              interaction.guild_id is None)
        await self.dispatch(MessageEvent(
            platform=self.name, chat_id=chat_id, user_id=user, text=text, chat_type=chat_type,
            user_name=str(interaction.user.name), message_id=str(interaction.id),
            thread_id=thread_id, respond=respond))
        if not answered and not await asyncio.to_thread(self.user_allowed, user):
            await respond("You are not allowed to use this bot (ask its owner to approve you).")

    async def _download(self, att: Any) -> Attachment:
        mime = str(att.content_type or "")
        kind, name = kind_of(mime), str(att.filename)
        if int(att.size or 0) > MAX_ATTACHMENT_BYTES:
            return Attachment(kind, name, mime, error="too large")
        try:
            return Attachment(kind, name, mime, bytes(await att.read()))
        except Exception as exc:  # noqa: BLE001 - the message says it could not be read
            return Attachment(kind, name, mime, error=f"download failed: {exc}")

    # -- out --------------------------------------------------------------------------------------
    async def _channel(self, chat_id: str) -> Any:
        if self._client is None:
            await self.connect()
        return self._client.get_partial_messageable(int(chat_id))

    async def send(self, chat_id: str, text: str, *, reply_to: Optional[str] = None,
                   thread_id: Optional[str] = None) -> Optional[str]:
        channel = await self._channel(thread_id or chat_id)
        return await retrying(lambda: self._post(channel, content=text),
                              f"discord: sending to {chat_id}")

    async def send_file(self, chat_id: str, path: Path, *, caption: str = "",
                        thread_id: Optional[str] = None) -> Optional[str]:
        import discord

        channel = await self._channel(thread_id or chat_id)
        return await retrying(lambda: self._post(channel, content=caption or None,
                                                 file=discord.File(str(path))),
                              f"discord: sending {path.name} to {chat_id}")

    async def _post(self, channel: Any, **kwargs: Any) -> str:
        import discord

        if self._client is not None and self._client.is_closed():
            raise Permanent("Discord: the adapter is stopped")  # a retry cannot help
        try:
            msg = await channel.send(**kwargs)
        except (discord.Forbidden, discord.NotFound) as exc:
            raise Permanent(f"Discord refused the message: {exc.text or exc.status}") from None
        return str(msg.id)

    async def typing(self, chat_id: str, thread_id: Optional[str] = None) -> None:
        with contextlib.suppress(Exception):  # in a thread: the thread, where the answer goes
            await self._client.http.send_typing(int(thread_id or chat_id))
