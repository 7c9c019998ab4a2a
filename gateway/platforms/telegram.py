"""Telegram over python-telegram-bot long polling.

The Bot API base URL is configurable (``TELEGRAM_BASE_URL`` / ``gateway.telegram.base_url``) so
tests point the adapter at a loopback fake server; everything else is stock PTB. Handlers only hand
the message to the runner and return, so PTB's sequential update processing keeps arrival order
without ever waiting on a turn.
"""
from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any, Mapping, Optional

from gateway.platforms.base import MessageEvent, PlatformAdapter

log = logging.getLogger("gateway.telegram")

from gateway.platforms.splitting import TELEGRAM_LIMIT, split_message, utf16_len  # noqa: F401


def telegram_api_urls(base: Optional[str]) -> tuple[str, str]:
    """``http://host:port`` (or a PTB-style ``.../bot`` / ``{token}`` URL) -> (base_url,
    base_file_url)."""
    base = (base or "https://api.telegram.org").rstrip("/")
    if "{token}" in base:
        return base, base.replace("/bot{token}", "/file/bot{token}")
    if base.endswith("/bot"):
        return base, base[: -len("/bot")] + "/file/bot"
    return base + "/bot", base + "/file/bot"


def chat_type_of(telegram_type: str) -> str:
    return {"private": "dm", "group": "group", "supergroup": "group",
            "channel": "channel"}.get(telegram_type, "dm")


class TelegramAdapter(PlatformAdapter):
    name = "telegram"
    max_message_length = TELEGRAM_LIMIT

    def __init__(self, token: str, base_url: Optional[str] = None,
                 poll_timeout: float = 10.0) -> None:
        super().__init__()
        self._token = token
        self._base_url = base_url
        self._poll_timeout = poll_timeout
        self._app: Any = None
        self._username = ""

    async def start(self) -> None:
        await self.connect()
        await self.start_polling()

    async def connect(self) -> None:
        """Ready to send (and to handle updates), not polling yet: gateway workers that are not the
        elected poller (gateway.election) only send."""
        from telegram.ext import Application, MessageHandler, filters

        api, files = telegram_api_urls(self._base_url)
        app = Application.builder().token(self._token).base_url(api).base_file_url(files).build()
        media = filters.PHOTO | filters.VOICE | filters.AUDIO | filters.Document.ALL
        app.add_handler(MessageHandler(filters.TEXT | media, self._on_update))
        try:
            await app.initialize()  # getMe: the first call that needs Telegram to answer
        except BaseException:
            with contextlib.suppress(Exception):
                await app.bot.shutdown()  # the HTTP clients it opened; the next attempt builds anew
            raise
        self._app = app
        self._username = (app.bot.username or "").lower()
        await app.start()

    async def start_polling(self) -> None:
        await self._app.updater.start_polling(poll_interval=0.0,
                                              timeout=int(max(1, self._poll_timeout)),
                                              allowed_updates=["message"],
                                              drop_pending_updates=False,
                                              error_callback=self._on_poll_error)
        log.info("telegram: polling as @%s", self._username or "?")

    def _on_poll_error(self, exc: Exception) -> None:
        log.warning("telegram: polling error: %s", type(exc).__name__)

    async def stop_receiving(self) -> None:
        app = self._app
        try:
            if app is not None and app.updater and app.updater.running:
                # fetched updates still reach the handler; sending still works
                await app.updater.stop()
        except Exception as exc:
            log.warning("telegram: error while stopping polling: %s", exc)

    async def stop(self) -> None:
        app, self._app = self._app, None
        if app is None:
            return
        try:
            if app.updater and app.updater.running:
                await app.updater.stop()
            if app.running:
                # processes updates already fetched, so nothing received is dropped
                await app.stop()
            await app.shutdown()
        except Exception as exc:  # stopping must not raise through the drain
            log.warning("telegram: error while stopping: %s", exc)

    async def _on_update(self, update: Any, _context: Any) -> None:
        from gateway.platforms.telegram_media import download, media_of

        msg = update.effective_message
        if msg is None or msg.from_user is None or not (msg.text or media_of(msg)):
            return
        text = msg.text or msg.caption or ""
        if self._username and text.startswith("/"):
            head, _, tail = text.partition(" ")
            cmd, _, target = head.partition("@")
            if target and target.lower() != self._username:
                return  # a command addressed to another bot in the group
            text = cmd + (" " + tail if tail else "")
        user = msg.from_user
        event = MessageEvent(
            platform=self.name, chat_id=str(msg.chat.id), user_id=str(user.id), text=text,
            chat_type=chat_type_of(msg.chat.type), user_name=user.username or user.full_name or "",
            message_id=str(msg.message_id),
            thread_id=str(msg.message_thread_id) if getattr(msg, "is_topic_message",
                                                            False) else None,
            attachments=await download(self._app.bot, msg) if self._app is not None else [],
        )
        await self.dispatch(event)

    async def send(self, chat_id: str, text: str, *, reply_to: Optional[str] = None,
                   thread_id: Optional[str] = None) -> Optional[str]:
        from telegram.error import RetryAfter, TelegramError

        if self._app is None:
            return None
        for attempt in range(3):
            try:
                sent = await self._app.bot.send_message(
                    chat_id=int(chat_id), text=text,
                    message_thread_id=int(thread_id) if thread_id else None)
                return str(sent.message_id)
            except RetryAfter as exc:
                import asyncio

                delay = (exc.retry_after.total_seconds()
                         if hasattr(exc.retry_after, "total_seconds") else exc.retry_after)
                await asyncio.sleep(min(float(delay), 30.0))
            except TelegramError as exc:
                log.warning("telegram: send to %s failed (attempt %d): %s", chat_id, attempt + 1,
                            exc)
        return None

    async def send_file(self, chat_id: str, path: Path, *, caption: str = "",
                        thread_id: Optional[str] = None) -> Optional[str]:
        """A photo or a document through the Bot API (``telegram_media.upload``)."""
        from telegram.error import TelegramError

        from gateway.platforms.telegram_media import upload

        if self._app is None:
            return None
        try:
            sent = await upload(self._app.bot, int(chat_id), path, caption,
                                int(thread_id) if thread_id else None)
            return str(sent.message_id)
        except (OSError, TelegramError) as exc:
            log.warning("telegram: sending %s to %s failed: %s", path.name, chat_id, exc)
            return None

    async def edit(self, chat_id: str, message_id: str, text: str) -> None:
        from telegram.error import TelegramError

        if self._app is None:
            return
        try:
            await self._app.bot.edit_message_text(chat_id=int(chat_id), message_id=int(message_id),
                                                  text=text)
        except TelegramError as exc:
            log.debug("telegram: edit failed: %s", exc)

    async def typing(self, chat_id: str, thread_id: Optional[str] = None) -> None:
        from telegram.constants import ChatAction
        from telegram.error import TelegramError

        if self._app is None:
            return
        try:
            await self._app.bot.send_chat_action(  # in a topic: that topic
                chat_id=int(chat_id), action=ChatAction.TYPING,
                message_thread_id=int(thread_id) if thread_id else None)
        except TelegramError:
            pass


# -- the plugin: the adapter for the gateway, and a direct sender for everyone else ------------

def credentials(section: Any, env: Mapping[str, str]) -> tuple[Optional[str], Optional[str]]:
    """(bot token, Bot API base URL): the environment, else ``gateway.telegram`` in config."""
    token = env.get("TELEGRAM_BOT_TOKEN") or section.token or section.bot_token
    return token, env.get("TELEGRAM_BASE_URL") or section.base_url


def settings(cfg: Any) -> tuple[Optional[str], Optional[str]]:
    """``credentials`` of a loaded config (None: only the environment)."""
    import os

    from hermes_core.gateway_config import TelegramConfig

    section = cfg.gateway.telegram if cfg is not None else TelegramConfig()
    return credentials(section, os.environ)


def from_settings(section: Any, env: Mapping[str, str]) -> Optional[TelegramAdapter]:
    """The platform factory (docs/CONTRACTS.md): None when no bot token is set."""
    token, base = credentials(section, env)
    return TelegramAdapter(token, base_url=base,
                           poll_timeout=section.poll_timeout) if token else None


def send_direct(cfg: Any, chat_id: str, thread_id: Optional[str], text: str) -> None:
    """One message through the Bot API, no gateway needed (cron runs from the CLI)."""
    import asyncio

    from cron.delivery import DeliveryError

    token, base = settings(cfg)
    if not token:
        raise DeliveryError("TELEGRAM_BOT_TOKEN is not set")
    asyncio.run(_bot_send(token, base, chat_id, thread_id, text))


async def _bot_send(token: str, base: Optional[str], chat_id: str, thread_id: Optional[str],
                    text: str) -> None:
    from telegram import Bot
    from telegram.error import TelegramError

    from cron.delivery import DeliveryError

    api, files = telegram_api_urls(base)
    chat: int | str = int(chat_id) if chat_id.lstrip("-").isdigit() else chat_id
    try:
        async with Bot(token, base_url=api, base_file_url=files) as bot:
            for piece in split_message(text):
                await bot.send_message(chat_id=chat, text=piece,
                                       message_thread_id=int(thread_id) if thread_id else None)
    except TelegramError as exc:
        raise DeliveryError(f"Telegram refused: {exc}") from None


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    from gateway.platforms.direct import Question

    questions = (Question("TELEGRAM_BOT_TOKEN", "Bot token (from @BotFather)", secret=True),
                 Question("TELEGRAM_ALLOWED_USERS", "Allowed user ids, comma-separated "
                          "(empty: pairing only)", required=False))
    ctx.register_platform("telegram", from_settings, send=send_direct,
                          env=("TELEGRAM_BOT_TOKEN",), setup=questions,
                          secrets=("TELEGRAM_BOT_TOKEN",))
