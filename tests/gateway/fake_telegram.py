"""A loopback fake of the Telegram Bot API (the subset the gateway uses), for end-to-end tests.

Real HTTP (aiohttp, its own event loop in a background thread). Tests queue user messages with
``push_message`` (with a photo, voice note or document: ``media=``) and read what the bot did from
``calls`` / ``sent_texts`` / ``uploads`` (files the bot sent, with their bytes). ``getUpdates`` long-polls
for at most ``max_poll`` seconds so shutdowns stay quick.
"""
from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any, Callable, Optional

from aiohttp import web

BOT_USER = {"id": 999000, "is_bot": True, "first_name": "Hermes", "username": "hermes_test_bot",
            "can_join_groups": True, "can_read_all_group_messages": False, "supports_inline_queries": False}
_STRING_PARAMS = {"text", "action", "parse_mode"}


class FakeTelegram:
    def __init__(self, token: str = "123456:TEST-TOKEN", max_poll: float = 0.5,
                 port: int = 0) -> None:
        """``port``: where to listen (0: a free one), e.g. the address a gateway already retries."""
        self.token = token
        self.max_poll = max_poll
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.missing_chats: set[int] = set()  # sendMessage to these fails like Telegram: "chat not found"
        self.peak_pollers = 0  # most getUpdates calls open at once from live clients (Telegram allows 1)
        self.confirmed = 0  # highest offset a poller sent: updates below it are forgotten, as Telegram does
        self._pollers = 0
        self._updates: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._next_update = 1
        self._next_message = 1
        self.files: dict[str, bytes] = {}  # file_id -> bytes users sent (served by getFile)
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._runner: Optional[web.AppRunner] = None
        self._thread: Optional[threading.Thread] = None
        self.port = port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> "FakeTelegram":
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self._serve())
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup())  # type: ignore[union-attr]
            self._loop.close()

        self._thread = threading.Thread(target=run, name="fake-telegram", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    async def _serve(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        app.router.add_get("/file/bot{token}/{path:.*}", self._file)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5)

    # -- scripting --------------------------------------------------------------------------
    def push_message(self, chat_id: int, user_id: int, text: str, *, chat_type: str = "private",
                     username: Optional[str] = None, thread_id: Optional[int] = None,
                     media: Optional[dict[str, Any]] = None) -> int:
        """Queue an incoming user message; returns its update_id. ``media``: ``{"photo": bytes}``,
        ``{"voice": bytes}`` or ``{"document": bytes, "file_name": ..., "mime_type": ...}``
        (``text`` becomes the caption)."""
        with self._cond:
            chat: dict[str, Any] = {"id": chat_id, "type": chat_type}
            if chat_type == "private":
                chat["first_name"] = f"user{user_id}"
            else:
                chat["title"] = f"group{chat_id}"
            update = {"update_id": self._next_update, "message": {
                "message_id": self._next_message, "date": int(time.time()), "chat": chat, "text": text,
                "from": {"id": user_id, "is_bot": False, "first_name": f"user{user_id}",
                         "username": username or f"user{user_id}"}}}
            if media:
                self._attach(update["message"], media)
            if thread_id is not None:  # a message in a forum topic
                update["message"].update(message_thread_id=thread_id, is_topic_message=True)
            if text.startswith("/"):
                update["message"]["entities"] = [{"type": "bot_command", "offset": 0,
                                                  "length": len(text.split(" ")[0])}]
            self._next_update += 1
            self._next_message += 1
            self._updates.append(update)
            self._cond.notify_all()
            return update["update_id"]

    def _attach(self, message: dict[str, Any], media: dict[str, Any]) -> None:
        kind = next(k for k in ("photo", "voice", "document") if k in media)
        data: bytes = media[kind]
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = data
        meta = {"file_id": file_id, "file_unique_id": "u" + file_id, "file_size": len(data)}
        message["caption"] = message.pop("text")
        if kind == "photo":
            message["photo"] = [dict(meta, file_id="thumb", width=1, height=1),
                                dict(meta, width=64, height=64)]
            self.files["thumb"] = b"a thumbnail, never the photo"
        elif kind == "voice":
            message["voice"] = dict(meta, duration=2, mime_type="audio/ogg")
        else:
            message["document"] = dict(meta, file_name=media.get("file_name", "file.bin"),
                                       mime_type=media.get("mime_type", "application/pdf"))

    def uploads(self) -> list[tuple[str, dict[str, Any]]]:
        """(method, params) of every sendPhoto/sendDocument; the file is params[kind] as
        ``{"filename", "data"}``."""
        with self._cond:
            return [(m, p) for m, p in self.calls if m in ("sendPhoto", "sendDocument")]

    def calls_of(self, method: str) -> list[dict[str, Any]]:
        with self._cond:
            return [params for name, params in self.calls if name == method]

    def sent_texts(self, chat_id: Optional[int] = None) -> list[str]:
        return [p["text"] for p in self.calls_of("sendMessage") if chat_id is None or int(p["chat_id"]) == chat_id]

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 20.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.1))
            return True

    def wait_for_sent(self, chat_id: int, n: int = 1, timeout: float = 20.0) -> list[str]:
        self.wait_for(lambda: len(self.sent_texts(chat_id)) >= n, timeout)
        return self.sent_texts(chat_id)

    # -- the API ----------------------------------------------------------------------------
    async def _params(self, request: web.Request) -> dict[str, Any]:
        if request.content_type == "application/json":
            data = await request.json()
            return dict(data or {})
        form = await request.post()
        out: dict[str, Any] = {}
        for key, value in form.items():
            if isinstance(value, web.FileField):
                out[key] = {"filename": value.filename, "data": value.file.read()}
                continue
            if not isinstance(value, str) or key in _STRING_PARAMS:
                out[key] = value
                continue
            try:
                out[key] = json.loads(value)
            except ValueError:
                out[key] = value
        return out

    async def _handle(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return web.json_response({"ok": False, "error_code": 401, "description": "Unauthorized"}, status=401)
        method = request.match_info["method"]
        params = await self._params(request)
        if method == "getUpdates":
            return web.json_response({"ok": True, "result": await self._get_updates(params, request)})
        if method != "getUpdates":
            with self._cond:
                self.calls.append((method, params))
                self._cond.notify_all()
        handler = getattr(self, f"_m_{method}", None)
        if handler is None:
            return web.json_response({"ok": False, "error_code": 404, "description": "Not Found"}, status=404)
        if method == "sendMessage" and str(params.get("chat_id")) in {str(c) for c in self.missing_chats}:
            return web.json_response({"ok": False, "error_code": 400, "description": "Bad Request: chat not found"},
                                     status=400)
        return web.json_response({"ok": True, "result": await handler(params)})

    async def _m_getMe(self, _p: dict[str, Any]) -> Any:
        return BOT_USER

    async def _m_deleteWebhook(self, _p: dict[str, Any]) -> Any:
        return True

    async def _m_getWebhookInfo(self, _p: dict[str, Any]) -> Any:
        return {"url": "", "has_custom_certificate": False, "pending_update_count": 0}

    async def _m_sendChatAction(self, _p: dict[str, Any]) -> Any:
        return True

    async def _get_updates(self, p: dict[str, Any], request: web.Request) -> Any:
        offset = int(p.get("offset") or 0)
        wait = min(float(p.get("timeout") or 0), self.max_poll)
        deadline = time.monotonic() + wait
        with self._cond:
            if offset > self.confirmed:
                self.confirmed = offset
                self._updates = [u for u in self._updates if u["update_id"] >= offset]
            self._pollers += 1
            self.peak_pollers = max(self.peak_pollers, self._pollers)
            self._cond.notify_all()
        try:
            while True:
                with self._cond:
                    ready = [u for u in self._updates if u["update_id"] >= offset]
                gone = request.transport is None or request.transport.is_closing()  # the poller died
                if ready or gone or time.monotonic() >= deadline:
                    return ready[: int(p.get("limit") or 100)]
                await asyncio.sleep(0.02)
        finally:
            with self._cond:
                self._pollers -= 1

    def _message(self, p: dict[str, Any]) -> dict[str, Any]:
        with self._cond:
            mid = self._next_message
            self._next_message += 1
        return {"message_id": mid, "date": int(time.time()), "chat": {"id": int(p["chat_id"]), "type": "private"},
                "from": BOT_USER, "text": p.get("text", "")}

    async def _m_sendMessage(self, p: dict[str, Any]) -> Any:
        return self._message(p)

    async def _m_sendPhoto(self, p: dict[str, Any]) -> Any:
        return self._message(p)

    async def _m_sendDocument(self, p: dict[str, Any]) -> Any:
        return self._message(p)

    async def _m_getFile(self, p: dict[str, Any]) -> Any:
        data = self.files[str(p["file_id"])]
        return {"file_id": p["file_id"], "file_unique_id": "u" + str(p["file_id"]),
                "file_size": len(data), "file_path": f"media/{p['file_id']}"}

    async def _file(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return web.Response(status=401)
        data = self.files.get(request.match_info["path"].split("/")[-1])
        return web.Response(body=data) if data is not None else web.Response(status=404)

    async def _m_editMessageText(self, p: dict[str, Any]) -> Any:
        msg = self._message(p)
        msg["message_id"] = int(p.get("message_id") or 0)
        return msg
