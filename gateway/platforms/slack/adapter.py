"""Slack through slack-bolt, in Socket Mode (the app opens a WebSocket to Slack: no public URL
needed) or HTTP Events mode (Slack POSTs events to our Request URL, ``slack.http_events``). The
app acknowledges each event and hands messages to the runner; answers go out with
``chat.postMessage`` in Slack's mrkdwn, into the message's thread, and the agent's files with
``files_upload_v2`` (getUploadURLExternal, the upload, completeUploadExternal) into the same
thread. The Socket Mode client reconnects by itself when Slack drops the socket; a send that
fails while Slack is away is retried (``gateway.platforms.retrying``), so nothing is lost."""
from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any, Optional

from gateway.platforms.base import MAX_ATTACHMENT_BYTES, Attachment, MessageEvent, PlatformAdapter
from gateway.platforms.markup import slack_mrkdwn
from gateway.platforms.retrying import Permanent, retrying
from gateway.platforms.slack import events
from gateway.platforms.slack.http_events import EventsServer, HttpSettings

log = logging.getLogger("gateway.slack")

PERMANENT_ERRORS = ("channel_not_found", "not_in_channel", "is_archived", "invalid_auth",
                    "account_inactive", "msg_too_long", "no_text", "not_authed", "missing_scope",
                    "file_uploads_disabled")


class SlackAdapter(PlatformAdapter):
    name = "slack"
    max_message_length = 3_900  # Slack shows longer messages truncated behind "show more"

    def __init__(self, bot_token: str, app_token: str = "", *,
                 base_url: str = "https://slack.com/api/",
                 http: Optional[HttpSettings] = None) -> None:
        """``http``: receive in HTTP Events mode with these settings (else Socket Mode)."""
        super().__init__()
        self._bot_token, self._app_token, self.base_url = bot_token, app_token, base_url
        self.http = http
        self.bot_user = ""
        self._client: Any = None
        self._socket: Any = None
        self.server: Optional[EventsServer] = None
        self._seen: dict[str, None] = {}

    async def connect(self) -> None:
        """``auth.test``: a wrong token fails here with Slack's own error name."""
        from slack_sdk.errors import SlackApiError
        from slack_sdk.web.async_client import AsyncWebClient

        self._client = AsyncWebClient(token=self._bot_token, base_url=self.base_url)
        try:
            auth = await self._client.auth_test()
        except SlackApiError as exc:
            raise RuntimeError(f"Slack refused the bot token: {exc.response.get('error')}") \
                from None
        self.bot_user = str(auth["user_id"])

    async def start(self) -> None:
        from slack_bolt.async_app import AsyncApp

        if self.http is None and not self._app_token:
            raise RuntimeError("Slack: SLACK_APP_TOKEN (xapp-…) is needed to receive messages "
                               "in Socket Mode (create one under Basic Information), or set "
                               "SLACK_SIGNING_SECRET and gateway.slack.mode: http")
        await self.connect()
        verify = {"signing_secret": self.http.signing_secret} if self.http is not None \
            else {"request_verification_enabled": False}  # the socket itself is authenticated
        app = AsyncApp(name="hermes", client=self._client, **verify)
        app.event("message")(self._on_event)
        app.event("app_mention")(self._on_event)
        if self.http is not None:
            self.server = EventsServer(app, self.http)
            await self.server.start()
            return
        from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

        self._socket = AsyncSocketModeHandler(app, self._app_token, web_client=self._client)
        await self._socket.connect_async()
        log.info("slack: connected as %s (Socket Mode)", self.bot_user)

    async def stop_receiving(self) -> None:
        handler, self._socket = self._socket, None
        if handler is not None:
            with contextlib.suppress(Exception):
                await handler.close_async()
        server, self.server = self.server, None
        if server is not None:
            with contextlib.suppress(Exception):
                await server.stop()

    async def stop(self) -> None:
        await self.stop_receiving()
        client = self._client
        session = getattr(client, "session", None) if client is not None else None
        if session is not None:
            with contextlib.suppress(Exception):
                await session.close()

    # -- in ---------------------------------------------------------------------------------------
    async def _on_event(self, event: dict[str, Any]) -> None:
        msg = events.incoming(event, self.bot_user)
        if msg is None or msg.ts in self._seen:  # Slack may send an event twice (retries)
            return
        self._seen[msg.ts] = None
        if len(self._seen) > 2000:
            self._seen.pop(next(iter(self._seen)))
        attachments = [await self._download(f) for f in msg.files]
        await self.dispatch(MessageEvent(
            platform=self.name, chat_id=msg.channel, user_id=msg.user, text=msg.text,
            chat_type=msg.chat_type, message_id=msg.ts, thread_id=msg.thread, raw=event,
            attachments=attachments))

    async def _download(self, file: dict[str, Any]) -> Attachment:
        import aiohttp

        mime, name = str(file.get("mimetype") or ""), str(file.get("name") or "file")
        kind = events.kind_of(mime)
        url = file.get("url_private_download") or file.get("url_private")
        if int(file.get("size") or 0) > MAX_ATTACHMENT_BYTES:
            return Attachment(kind, name, mime, error="too large")
        if not url:
            return Attachment(kind, name, mime, error="no download address")
        headers = {"Authorization": f"Bearer {self._bot_token}"}
        try:
            async with aiohttp.ClientSession() as http, http.get(str(url), headers=headers) as r:
                data = await r.content.read(MAX_ATTACHMENT_BYTES + 1)
                if r.status != 200:
                    return Attachment(kind, name, mime, error=f"Slack answered {r.status}")
        except aiohttp.ClientError as exc:
            return Attachment(kind, name, mime, error=f"download failed: {exc}")
        if len(data) > MAX_ATTACHMENT_BYTES:
            return Attachment(kind, name, mime, error="too large")
        return Attachment(kind, name, mime, data)

    # -- out --------------------------------------------------------------------------------------
    async def send(self, chat_id: str, text: str, *, reply_to: Optional[str] = None,
                   thread_id: Optional[str] = None) -> Optional[str]:
        if self._client is None:
            await self.connect()
        return await retrying(lambda: self._post(chat_id, text, thread_id),
                              f"slack: sending to {chat_id}")

    async def _post(self, chat_id: str, text: str, thread_id: Optional[str]) -> str:
        async with _refusals("the message"):
            resp = await self._client.chat_postMessage(channel=chat_id, text=slack_mrkdwn(text),
                                                       thread_ts=thread_id or None)
        return str(resp["ts"])

    async def send_file(self, chat_id: str, path: Path, *, caption: str = "",
                        thread_id: Optional[str] = None) -> Optional[str]:
        """An upload into the chat (and thread); Slack shows images inline."""
        if self._client is None:
            await self.connect()
        return await retrying(lambda: self._upload(chat_id, path, caption, thread_id),
                              f"slack: uploading {path.name} to {chat_id}")

    async def _upload(self, chat_id: str, path: Path, caption: str,
                      thread_id: Optional[str]) -> str:
        async with _refusals(f"the file {path.name}"):
            resp = await self._client.files_upload_v2(
                channel=chat_id, file=str(path), filename=path.name, title=path.name,
                initial_comment=slack_mrkdwn(caption) if caption else None,
                thread_ts=thread_id or None)
        files = resp.get("files") or [{}]
        return str(files[0].get("id") or path.name)


@contextlib.asynccontextmanager
async def _refusals(what: str) -> Any:
    """Slack's errors that a retry cannot fix become ``Permanent``; others are retried."""
    from slack_sdk.errors import SlackApiError

    try:
        yield
    except SlackApiError as exc:
        error = str(exc.response.get("error"))
        if error in PERMANENT_ERRORS:
            raise Permanent(f"Slack refused {what}: {error}") from None
        raise
