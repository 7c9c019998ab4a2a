"""A loopback fake of Discord for the Discord platform's tests, speaking Discord's wire formats:
the REST API (``/api/v10/...``, ``Authorization: Bot <token>``) and the Gateway WebSocket
(zlib-stream compressed JSON: HELLO, IDENTIFY -> READY, heartbeats and their ACKs, RESUME ->
RESUMED, ``GUILD_CREATE`` of the servers in ``guilds`` after READY, ``THREAD_CREATE``,
``MESSAGE_CREATE`` and ``INTERACTION_CREATE`` dispatches), and application commands (``PUT
/applications/<app>/commands`` is recorded in ``commands``; an interaction's callback and its
follow-ups through ``/webhooks/<app>/<token>`` in ``callbacks`` and ``followups``).

Tests ``push`` messages as users write them, ``interact`` as a user runs a slash command, read
what the bot posted from ``posted``, and ``drop()`` the socket as Discord does when it asks a
client to reconnect (the client resumes)."""
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
        self.guilds: list[dict[str, Any]] = []  # sent as GUILD_CREATE after each READY
        self.commands: list[dict[str, Any]] = []  # the last application commands registered
        self.callbacks: list[dict[str, Any]] = []  # interaction responses (type 5: deferred)
        self.followups: list[dict[str, Any]] = []  # {"token", "content"}
        self._interactions: dict[str, str] = {}  # token -> channel id
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
        app.router.add_put("/api/v10/applications/{app}/commands", self._register_commands)
        app.router.add_post("/api/v10/interactions/{id}/{token}/callback", self._callback)
        app.router.add_post("/api/v10/webhooks/{app}/{token}", self._followup)
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

    async def _register_commands(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return reply({"message": "401: Unauthorized", "code": 0}, status=401)
        made = [{**c, "id": self.next_id(), "application_id": request.match_info["app"],
                 "version": self.next_id(), "type": c.get("type", 1)}
                for c in await request.json()]
        with self._cond:
            self.commands = made
            self._cond.notify_all()
        return reply(made)

    async def _callback(self, request: web.Request) -> web.Response:
        body = await request.json()
        with self._cond:
            self.callbacks.append({**body, "token": request.match_info["token"]})
            self._cond.notify_all()
        return reply({"interaction": {"id": request.match_info["id"], "type": 2,
                                      "response_message_loading": body.get("type") == 5},
                      "resource": {"type": body.get("type")}})

    async def _followup(self, request: web.Request) -> web.Response:
        token = request.match_info["token"]
        body = await request.json()
        channel = self._interactions.get(token)
        if channel is None:
            return reply({"message": "Unknown Webhook", "code": 10015}, status=404)
        msg = self.message(channel, BOT, str(body.get("content") or ""))
        with self._cond:
            self.followups.append({**body, "token": token})
            self._cond.notify_all()
        return reply(msg)

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
                await self._send(0, {"v": 10, "user": BOT, "session_id": "s1",
                                     "guilds": [{"id": g["id"], "unavailable": True}
                                                for g in self.guilds],
                                     "resume_gateway_url": self.gateway, "private_channels": [],
                                     "application": {"id": BOT["id"], "flags": 0}}, "READY")
                for guild in self.guilds:  # READY lists them unavailable; then each arrives
                    await self._send(0, guild, "GUILD_CREATE")
                self._live.set()
            elif frame["op"] == 6:
                self.resumes += 1
                await self._send(0, {}, "RESUMED")
                self._live.set()
        if self._ws is ws:  # not a newer connection (the next test's client)
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
        self.dispatch("MESSAGE_CREATE", msg, timeout)

    def dispatch(self, event: str, data: dict[str, Any], timeout: float = 30) -> None:
        """Send a dispatch once the client is connected (it may be resuming)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._live.is_set():
                try:
                    asyncio.run_coroutine_threadsafe(
                        self._send(0, data, event), self._loop).result(10)
                    return
                except ConnectionError:
                    pass
            time.sleep(0.05)
        raise AssertionError("the Discord client never connected")

    # -- servers, threads, interactions ------------------------------------------------------
    @staticmethod
    def guild(guild_id: str, *channels: str) -> dict[str, Any]:
        """A server with text channels, as GUILD_CREATE carries it."""
        return {"id": guild_id, "name": "test server", "owner_id": "1", "roles": [],
                "emojis": [], "stickers": [], "features": [], "member_count": 3,
                "unavailable": False, "members": [], "voice_states": [], "presences": [],
                "threads": [], "joined_at": datetime.now(timezone.utc).isoformat(),
                "channels": [{"id": c, "type": 0, "guild_id": guild_id, "name": f"ch-{c[-2:]}",
                              "position": i, "permission_overwrites": [], "nsfw": False,
                              "parent_id": None} for i, c in enumerate(channels)]}

    def open_thread(self, guild: str, parent: str, owner: dict[str, Any], name: str) -> str:
        """A user starts a public thread under ``parent``: THREAD_CREATE; returns its id."""
        thread = self.next_id()
        self.dispatch("THREAD_CREATE", {
            "id": thread, "guild_id": guild, "parent_id": parent, "owner_id": owner["id"],
            "name": name, "type": 11, "message_count": 0, "member_count": 1,
            "rate_limit_per_user": 0, "newly_created": True, "flags": 0,
            "thread_metadata": {"archived": False, "auto_archive_duration": 1440,
                                "archive_timestamp": datetime.now(timezone.utc).isoformat(),
                                "locked": False}})
        return thread

    def interact(self, name: str, user: dict[str, Any], channel: str, *,
                 guild: Optional[str] = None, text: Optional[str] = None) -> str:
        """A user runs ``/<name> [text]`` in ``channel``: INTERACTION_CREATE; returns its token."""
        token = f"itoken-{self.next_id()}"
        self._interactions[token] = channel
        [command] = [c for c in self.commands if c["name"] == name]
        options = [{"name": command["options"][0]["name"], "type": 3, "value": text}] \
            if text is not None else []
        data: dict[str, Any] = {
            "id": self.next_id(), "application_id": BOT["id"], "type": 2, "token": token,
            "version": 1, "channel_id": channel, "locale": "en-US", "app_permissions": "0",
            "attachment_size_limit": 8 << 20, "entitlements": [],
            "data": {"id": command["id"], "name": name, "type": 1, "options": options}}
        if guild:
            data.update(guild_id=guild, context=0, channel={"id": channel, "type": 0,
                                                            "guild_id": guild},
                        member={"user": user, "roles": [], "flags": 0, "permissions": "0",
                                "joined_at": datetime.now(timezone.utc).isoformat(),
                                "deaf": False, "mute": False})
        else:
            data.update(user=user, context=1, channel={"id": channel, "type": 1,
                                                       "recipients": [user]})
        self.dispatch("INTERACTION_CREATE", data)
        return token

    def wait_followups(self, token: str, n: int = 1, timeout: float = 30) -> list[str]:
        def mine() -> list[str]:
            return [f["content"] for f in self.followups if f["token"] == token]

        with self._cond:
            if not self._cond.wait_for(lambda: len(mine()) >= n, timeout):
                raise AssertionError(f"{n} follow-up(s) to {token}: got {mine()}")
            return mine()

    def wait_commands(self, timeout: float = 30) -> list[dict[str, Any]]:
        with self._cond:
            if not self._cond.wait_for(lambda: bool(self.commands), timeout):
                raise AssertionError("no application commands were registered")
            return list(self.commands)

    def reset(self) -> None:
        """Forget what earlier tests saw (one fake serves a whole test module)."""
        with self._cond:
            for kept in (self.posted, self.typing, self.commands, self.callbacks,
                         self.followups):
                kept.clear()
            self.files.clear()

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
