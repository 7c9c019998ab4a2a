"""A loopback fake of Discord for the Discord platform's tests, speaking Discord's wire formats:
the REST API (``/api/v10/...``, ``Authorization: Bot <token>``) and the Gateway WebSocket
(zlib-stream compressed JSON: HELLO, IDENTIFY -> READY, heartbeats and their ACKs, RESUME ->
RESUMED, ``MESSAGE_CREATE`` dispatches).

Tests ``push`` messages as users write them, read what the bot posted from ``posted``, and
``drop()`` the socket as Discord does when it asks a client to reconnect (the client resumes)."""
from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
import zlib
from datetime import datetime, timezone
from typing import Any, Optional

from aiohttp import web

TOKEN = "fake-discord-bot-token"
BOT = {"id": "900000000000000001", "username": "hermes", "discriminator": "0",
       "global_name": None, "avatar": None, "bot": True}


def reply(data: Any, status: int = 200) -> web.Response:
    """JSON as Discord sends it: ``Content-Type: application/json`` exactly (no charset)."""
    return web.Response(body=json.dumps(data).encode(), status=status,
                        content_type="application/json")


class FakeDiscord:
    def __init__(self) -> None:
        self.posted: list[dict[str, Any]] = []
        self.typing: list[str] = []
        self.files: dict[str, bytes] = {}
        self.identifies = self.resumes = 0
        self._ids = itertools.count(1_000_000_000_000_000)
        self._seq = itertools.count(1)
        self._cond = threading.Condition()
        self._ws: Optional[web.WebSocketResponse] = None
        self._zlib: Any = None
        self._live = asyncio.Event()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._runner: Optional[web.AppRunner] = None
        self._thread: Optional[threading.Thread] = None
        self.port = 0

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    @property
    def gateway(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    def next_id(self) -> str:
        return str(next(self._ids))

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "FakeDiscord":
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._serve())
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup())  # type: ignore[union-attr]
            self._loop.close()

        self._thread = threading.Thread(target=run, name="fake-discord", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    async def _serve(self) -> None:
        app = web.Application()
        app.router.add_get("/gateway", self._socket)
        app.router.add_get("/api/v10/users/@me", self._me)
        app.router.add_get("/api/v10/oauth2/applications/@me", self._application)
        app.router.add_post("/api/v10/channels/{channel}/messages", self._post)
        app.router.add_post("/api/v10/channels/{channel}/typing", self._typing)
        app.router.add_get("/files/{name}", self._file)
        self._runner = web.AppRunner(app, shutdown_timeout=1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def stop(self) -> None:
        if self._ws is not None and not self._ws.closed:
            self.drop()
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5)

    # -- REST --------------------------------------------------------------------------------
    @staticmethod
    def _authorised(request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bot {TOKEN}"

    async def _me(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return reply({"message": "401: Unauthorized", "code": 0}, status=401)
        return reply(BOT)

    async def _application(self, _request: web.Request) -> web.Response:
        return reply({"id": BOT["id"], "name": "hermes", "description": "", "icon": None,
                      "bot_public": False, "bot_require_code_grant": False, "flags": 0,
                      "verify_key": "0" * 64, "team": None, "rpc_origins": [],
                      "owner": {**BOT, "bot": False, "username": "owner"}})

    async def _post(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return reply({"message": "401: Unauthorized", "code": 0}, status=401)
        files: dict[str, bytes] = {}
        if request.content_type.startswith("multipart/"):
            body: dict[str, Any] = {}
            async for part in await request.multipart():
                if part.name == "payload_json":
                    body = json.loads(await part.text())
                else:
                    files[str(part.filename)] = bytes(await part.read())
        else:
            body = await request.json()
        channel = request.match_info["channel"]
        msg = self.message(channel, BOT, str(body.get("content") or ""))
        with self._cond:
            self.posted.append({**body, "channel_id": channel, "files": files, "id": msg["id"]})
            self._cond.notify_all()
        return reply(msg)

    async def _typing(self, request: web.Request) -> web.Response:
        self.typing.append(request.match_info["channel"])
        return web.Response(status=204)

    async def _file(self, request: web.Request) -> web.Response:
        return web.Response(body=self.files[request.match_info["name"]])

    # -- Gateway -----------------------------------------------------------------------------
    async def _send(self, op: int, d: Any, t: Optional[str] = None) -> None:
        ws = self._ws
        if ws is None or ws.closed:
            raise ConnectionError("no gateway connection")
        frame = {"op": op, "d": d, "s": next(self._seq) if op == 0 else None, "t": t}
        data = self._zlib.compress(json.dumps(frame).encode()) + self._zlib.flush(zlib.Z_SYNC_FLUSH)
        await ws.send_bytes(data)

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(timeout=1)
        await ws.prepare(request)
        self._ws, self._zlib = ws, zlib.compressobj()
        await self._send(10, {"heartbeat_interval": 41250})
        async for msg in ws:
            frame = json.loads(msg.data)
            if frame["op"] == 1:
                await self._send(11, None)
            elif frame["op"] == 2:
                self.identifies += 1
                await self._send(0, {"v": 10, "user": BOT, "guilds": [], "session_id": "s1",
                                     "resume_gateway_url": self.gateway, "private_channels": [],
                                     "application": {"id": BOT["id"], "flags": 0}}, "READY")
                self._live.set()
            elif frame["op"] == 6:
                self.resumes += 1
                await self._send(0, {}, "RESUMED")
                self._live.set()
        self._live.clear()
        return ws

    def message(self, channel: str, author: dict[str, Any], content: str, *,
                guild: Optional[str] = None, mentions: tuple[dict, ...] = (),
                attachments: tuple[dict, ...] = ()) -> dict[str, Any]:
        msg = {"id": self.next_id(), "channel_id": channel, "author": author, "content": content,
               "timestamp": datetime.now(timezone.utc).isoformat(), "edited_timestamp": None,
               "tts": False, "mention_everyone": False, "mentions": list(mentions),
               "mention_roles": [], "attachments": list(attachments), "embeds": [],
               "pinned": False, "type": 0, "flags": 0}
        if guild:
            msg["guild_id"] = guild
        return msg

    def push(self, msg: dict[str, Any], timeout: float = 30) -> None:
        """Dispatch ``MESSAGE_CREATE`` once the client is connected (it may be resuming)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._live.is_set():
                try:
                    asyncio.run_coroutine_threadsafe(
                        self._send(0, msg, "MESSAGE_CREATE"), self._loop).result(10)
                    return
                except ConnectionError:
                    pass
            time.sleep(0.05)
        raise AssertionError("the Discord client never connected")

    def drop(self) -> None:
        """Close the socket with 4000 (unknown error: reconnect and resume), as Discord does."""
        ws = self._ws
        if ws is not None:
            self._live.clear()
            asyncio.run_coroutine_threadsafe(ws.close(code=4000), self._loop).result(10)

    def wait_posted(self, channel: str, n: int = 1, timeout: float = 30) -> list[dict[str, Any]]:
        def mine() -> list[dict[str, Any]]:
            return [p for p in self.posted if p["channel_id"] == channel]

        with self._cond:
            if not self._cond.wait_for(lambda: len(mine()) >= n, timeout):
                raise AssertionError(f"{n} message(s) to {channel}: got {mine()}")
            return mine()
