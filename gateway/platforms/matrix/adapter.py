"""Matrix over matrix-nio: a long-polling ``/sync`` loop of our own, so a homeserver that restarts
is waited for (backoff) instead of ending the loop, and the sync token is kept in
``HERMES_HOME/platforms/matrix/<user>.json``: after a gateway restart the messages sent meanwhile
are answered, and nothing is answered twice. The first start ever skips the room history.

Rooms: one with two members is a DM; in larger rooms the bot answers only when mentioned
(``events.addresses_bot``). Invites are accepted from users the access rules admit
(``gateway.matrix.accept_invites: all`` also from strangers, who then get a pairing code), others
are declined. Unencrypted rooms only (no libolm here): an encrypted event is logged and skipped.
"""
from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import mimetypes
from pathlib import Path
from typing import Any, Optional

from gateway.platforms import settings as ps
from gateway.platforms.base import (MAX_ATTACHMENT_BYTES, Attachment, MessageEvent,
                                    PlatformAdapter, end_task)
from gateway.platforms.matrix import events
from gateway.platforms.retrying import Permanent, first_line, retrying

log = logging.getLogger("gateway.matrix")

MATRIX_LIMIT = 16_000  # events are capped at 64 KiB with the HTML body: leave room for it


class MatrixAdapter(PlatformAdapter):
    name = "matrix"
    max_message_length = MATRIX_LIMIT

    def __init__(self, homeserver: str, user_id: str, access_token: str = "", password: str = "",
                 device_id: str = "", accept_invites: str = "allowed",
                 sync_timeout: float = 30.0) -> None:
        super().__init__()
        self.homeserver, self.user_id = homeserver.rstrip("/"), user_id
        self._token, self._password, self._device = access_token, password, device_id
        self.accept_invites = accept_invites
        self.sync_timeout = sync_timeout
        self.client: Any = None
        self.display_name = ""
        self._task: Optional[asyncio.Task[None]] = None
        self._receiving = False
        self._last_event: dict[str, str] = {}  # thread root -> latest event in it (reply fallback)

    # -- connection ------------------------------------------------------------------------------
    async def connect(self) -> None:
        """Logged in and able to send (no sync yet)."""
        from nio import AsyncClient, AsyncClientConfig, LoginResponse, WhoamiResponse

        config = AsyncClientConfig(max_timeouts=1, request_timeout=self.sync_timeout + 30,
                                   store_sync_tokens=False, encryption_enabled=False)
        client = AsyncClient(self.homeserver, self.user_id, device_id=self._device or None,
                             config=config)
        try:
            if self._token:
                client.access_token = self._token
                who = await client.whoami()
                if not isinstance(who, WhoamiResponse):
                    raise RuntimeError(f"the access token was refused: {first_line(who.message)}")
                client.user_id, client.device_id = who.user_id, who.device_id or self._device
            else:
                login = await client.login(self._password, device_name="Hermes")
                if not isinstance(login, LoginResponse):
                    raise RuntimeError(f"login as {self.user_id} failed: "
                                       f"{first_line(login.message)}")
        except BaseException:
            await client.close()
            raise
        self.client, self.user_id = client, client.user_id
        name = await client.get_displayname(client.user_id)
        self.display_name = str(getattr(name, "displayname", "") or "")

    async def start(self) -> None:
        await self.connect()
        state = ps.read_state(self._state_path())
        since = state.get("since")
        if not since:  # the first start: the rooms' history is not a list of questions
            first = await self.client.sync(timeout=0, full_state=True)
            since = self._checked(first).next_batch
            self._save(since)
        self._receiving = True
        self._task = asyncio.ensure_future(self._sync_loop(since))
        log.info("matrix: syncing as %s", self.user_id)

    def _state_path(self) -> Path:
        return ps.state_file("matrix", self.user_id)

    def _save(self, since: str) -> None:
        try:
            ps.write_state(self._state_path(), {"since": since})
        except OSError as exc:
            log.warning("matrix: could not keep the sync token: %s", exc)

    @staticmethod
    def _checked(resp: Any) -> Any:
        from nio import SyncResponse

        if not isinstance(resp, SyncResponse):
            raise RuntimeError(f"sync failed: {first_line(getattr(resp, 'message', resp))}")
        return resp

    async def _sync_loop(self, since: str) -> None:
        from hermes_core.retry import jittered_backoff

        failures = 0
        while self._receiving:
            try:
                resp = self._checked(await self.client.sync(
                    timeout=int(self.sync_timeout * 1000), since=since, full_state=False))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the homeserver is away: wait for it
                failures += 1
                delay = jittered_backoff(failures, base=0.5, cap=10.0)
                log.warning("matrix: sync failed (%s); retrying in %.1fs", first_line(exc), delay)
                await asyncio.sleep(delay)
                continue
            failures = 0
            await self._handle_sync(resp)
            since = resp.next_batch
            self._save(since)

    async def stop_receiving(self) -> None:
        self._receiving = False
        task, self._task = self._task, None
        await end_task(task)

    async def stop(self) -> None:
        await self.stop_receiving()
        client, self.client = self.client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()

    # -- incoming --------------------------------------------------------------------------------
    async def _handle_sync(self, resp: Any) -> None:
        for room_id, info in resp.rooms.invite.items():
            await self._on_invite(room_id, info)
        for room_id, info in resp.rooms.join.items():
            for event in info.timeline.events:
                try:
                    await self._on_event(room_id, event)
                except Exception:  # one odd event never stops the room
                    log.exception("matrix: could not handle an event in %s", room_id)

    async def _on_invite(self, room_id: str, info: Any) -> None:
        inviter = next((getattr(e, "sender", "") for e in info.invite_state
                        if getattr(e, "state_key", None) == self.user_id), "")
        welcome = (self.accept_invites == "all"
                   or await asyncio.to_thread(self.user_allowed, inviter))
        if welcome:
            log.info("matrix: joining %s (invited by %s)", room_id, inviter)
            await self.client.join(room_id)
        else:
            log.info("matrix: declining the invite to %s from %s (not allowed)", room_id, inviter)
            await self.client.room_leave(room_id)

    async def _on_event(self, room_id: str, event: Any) -> None:
        source = getattr(event, "source", None) or {}
        if source.get("type") != "m.room.message" or event.sender == self.user_id:
            if source.get("type") == "m.room.encrypted":
                log.warning("matrix: %s is encrypted; Hermes reads unencrypted rooms only", room_id)
            return
        content = source.get("content") or {}
        kind = events.kind_of(content)
        if kind is None:
            return
        room = self.client.rooms.get(room_id)
        members = int(getattr(room, "member_count", 0) or len(getattr(room, "users", {}) or {}))
        dm = members <= 2
        thread = events.thread_of(content)
        if thread:
            self._last_event[thread] = event.event_id
        if not dm and not events.addresses_bot(content, self.user_id, self.display_name):
            return
        text, attachments = "", []
        if kind == "text":
            text = str(content.get("body") or "")
            text = text if dm else events.strip_mention(text, self.user_id, self.display_name)
        else:
            attachments.append(await self._download(kind, content))
        await self.dispatch(MessageEvent(
            platform=self.name, chat_id=room_id, user_id=event.sender, text=text,
            chat_type="dm" if dm else ("thread" if thread else "group"),
            user_name=getattr(room, "user_name", lambda _u: "")(event.sender) or "",
            message_id=event.event_id, thread_id=thread, raw=source, attachments=attachments))

    async def _download(self, kind: str, content: dict[str, Any]) -> Attachment:
        from nio import DownloadError

        name = str(content.get("body") or kind)
        info = content.get("info") or {}
        mime = str(info.get("mimetype") or "")
        if int(info.get("size") or 0) > MAX_ATTACHMENT_BYTES:
            return Attachment(kind, name, mime, error="too large to download")
        resp = await self.client.download(mxc=str(content.get("url") or ""))
        if isinstance(resp, DownloadError):
            return Attachment(kind, name, mime, error=first_line(resp.message))
        return Attachment(kind, name, mime or str(getattr(resp, "content_type", "")), resp.body)

    # -- outgoing --------------------------------------------------------------------------------
    async def _room_send(self, room_id: str, content: dict[str, Any]) -> Optional[str]:
        from nio import RoomSendResponse

        async def attempt() -> str:
            if self.client is None:
                raise Permanent("not connected")
            resp = await self.client.room_send(room_id, "m.room.message", content,
                                               ignore_unverified_devices=True)
            if isinstance(resp, RoomSendResponse):
                return str(resp.event_id)
            status = getattr(getattr(resp, "transport_response", None), "status", 500)
            if status is not None and 400 <= int(status) < 500 and int(status) != 429:
                raise Permanent(first_line(getattr(resp, "message", resp)))
            raise RuntimeError(first_line(getattr(resp, "message", resp)))

        return await retrying(attempt, f"matrix: sending to {room_id}")

    async def send(self, chat_id: str, text: str, *, reply_to: Optional[str] = None,
                   thread_id: Optional[str] = None) -> Optional[str]:
        content = events.in_thread(events.text_content(text), thread_id,
                                   self._last_event.get(thread_id or ""))
        return await self._room_send(chat_id, content)

    async def send_file(self, chat_id: str, path: Path, *, caption: str = "",
                        thread_id: Optional[str] = None) -> Optional[str]:
        from nio import UploadResponse

        data = path.read_bytes()
        mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"

        async def upload() -> str:
            resp, _keys = await self.client.upload(io.BytesIO(data), content_type=mime,
                                                   filename=path.name, filesize=len(data))
            if not isinstance(resp, UploadResponse):
                raise RuntimeError(first_line(getattr(resp, "message", resp)))
            return str(resp.content_uri)

        mxc = await retrying(upload, f"matrix: uploading {path.name}")
        if mxc is None:
            return None
        if caption:
            await self.send(chat_id, caption, thread_id=thread_id)
        content = events.file_content(path.name, mime, len(data), mxc)
        return await self._room_send(chat_id, events.in_thread(content, thread_id))

    async def typing(self, chat_id: str, thread_id: Optional[str] = None) -> None:
        # Matrix shows typing per room, threads included
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.room_typing(chat_id, typing_state=True, timeout=6000)
