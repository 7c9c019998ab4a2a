"""A loopback fake of Slack for the Slack platform's tests, speaking Slack's wire formats: the
Web API (``POST /api/<method>``, form or JSON bodies, Bearer tokens, ``{"ok": ...}`` answers)
and Socket Mode (``apps.connections.open`` hands out a WebSocket URL; the server says
``hello``, pushes ``events_api`` envelopes and expects each ``envelope_id`` acknowledged).

Tests push events with ``push`` (it returns once the app acknowledged the envelope), read what
the bot posted from ``posted``, and ``drop()`` the socket as Slack does when it rotates
connections. Files are served from ``/files/<name>`` to the bot token only; the bot's uploads
(``files.getUploadURLExternal``, a POST of the bytes to the upload URL, then
``files.completeUploadExternal``) land in ``uploads``. HTTP Events mode: ``deliver`` POSTs an
event to the app's Request URL signed as Slack signs it (``X-Slack-Signature``)."""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import threading
import time
import urllib.error
import urllib.request
import uuid
from typing import Any, Optional

from aiohttp import WSMsgType, web

BOT_TOKEN, APP_TOKEN = "xoxb-test-bot-token", "xapp-test-app-token"
BOT_USER, TEAM = "UHERMES01", "T0TEAM001"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


class FakeSlack:
    def __init__(self) -> None:
        self.posted: list[dict[str, Any]] = []
        self.files: dict[str, bytes] = {}
        self.uploads: list[dict[str, Any]] = []  # completed uploads, with their bytes
        self._staged: dict[str, dict[str, Any]] = {}  # file id -> name, length, bytes
        self.connections = 0  # Socket Mode connections opened so far
        self._ts = itertools.count(1)
        self._cond = threading.Condition()
        self._acks: set[str] = set()
        self._ws: Optional[web.WebSocketResponse] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._runner: Optional[web.AppRunner] = None
        self._thread: Optional[threading.Thread] = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "FakeSlack":
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._serve())
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup())  # type: ignore[union-attr]
            self._loop.close()

        self._thread = threading.Thread(target=run, name="fake-slack", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    async def _serve(self) -> None:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/link", self._socket)
        app.router.add_get("/files/{name}", self._file)
        app.router.add_post("/upload/{file_id}", self._receive_upload)
        self._runner = web.AppRunner(app, shutdown_timeout=1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def stop(self) -> None:
        if self._loop is not None and self._ws is not None and not self._ws.closed:
            self.drop()
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5)

    # -- Web API -----------------------------------------------------------------------------
    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        token = request.headers.get("Authorization", "")[7:]
        if request.content_type == "application/json":
            params = await request.json()
        else:
            params = dict(await request.post())
        params = {**request.query, **params}  # slack_sdk sends some methods' params in the URL
        want = APP_TOKEN if method == "apps.connections.open" else BOT_TOKEN
        if token != want:
            return web.json_response({"ok": False, "error": "invalid_auth"})
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            return web.json_response({"ok": False, "error": "unknown_method"})
        return web.json_response({"ok": True, **handler(params)})

    def _m_auth_test(self, _p: dict[str, Any]) -> dict[str, Any]:
        return {"url": "https://hermes-test.slack.com/", "team": "Test", "user": "hermes",
                "team_id": TEAM, "user_id": BOT_USER, "bot_id": "BHERMES01"}

    def _m_apps_connections_open(self, _p: dict[str, Any]) -> dict[str, Any]:
        return {"url": f"ws://127.0.0.1:{self.port}/link?ticket={uuid.uuid4().hex}"}

    def _m_chat_postMessage(self, p: dict[str, Any]) -> dict[str, Any]:
        ts = f"{int(time.time())}.{next(self._ts):06d}"
        with self._cond:
            self.posted.append({**p, "ts": ts})
            self._cond.notify_all()
        return {"channel": p.get("channel"), "ts": ts, "message": {"text": p.get("text")}}

    def _m_files_getUploadURLExternal(self, p: dict[str, Any]) -> dict[str, Any]:
        file_id = f"F{uuid.uuid4().hex[:10].upper()}"
        self._staged[file_id] = {"name": p.get("filename"), "length": int(p["length"])}
        return {"file_id": file_id,
                "upload_url": f"http://127.0.0.1:{self.port}/upload/{file_id}"}

    async def _receive_upload(self, request: web.Request) -> web.Response:
        staged = self._staged.get(request.match_info["file_id"])
        if staged is None:
            return web.Response(status=404, text="unknown upload")
        staged["data"] = await request.read()
        return web.Response(text=f"OK - {len(staged['data'])}")

    def _m_files_completeUploadExternal(self, p: dict[str, Any]) -> dict[str, Any]:
        done = []
        for f in json.loads(p["files"]):
            staged = self._staged.pop(f["id"])
            assert len(staged.get("data", b"")) == staged["length"], "upload length mismatch"
            done.append({"id": f["id"], "name": staged["name"], "title": f.get("title")})
            with self._cond:
                self.uploads.append({**staged, "channel": p.get("channel_id"),
                                     "thread_ts": p.get("thread_ts"),
                                     "initial_comment": p.get("initial_comment")})
                self._cond.notify_all()
        return {"files": done}

    async def _file(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {BOT_TOKEN}":
            return web.Response(status=403, text="<html>login page</html>")
        return web.Response(body=self.files[request.match_info["name"]])

    # -- Socket Mode -------------------------------------------------------------------------
    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(timeout=1)  # a close waits at most this for the app
        await ws.prepare(request)
        self._ws = ws
        self.connections += 1
        await ws.send_json({"type": "hello", "num_connections": 1,
                            "debug_info": {"host": "fake-slack", "approximate_connection_time":
                                           18060}, "connection_info": {"app_id": "AHERMES01"}})
        async for msg in ws:
            if msg.type == WSMsgType.TEXT:
                envelope = json.loads(msg.data).get("envelope_id")
                with self._cond:
                    self._acks.add(str(envelope))
                    self._cond.notify_all()
        return ws

    def push(self, event: dict[str, Any], timeout: float = 30) -> str:
        """Deliver one Events API event over the socket; returns once it was acknowledged."""
        envelope = uuid.uuid4().hex
        body = {"envelope_id": envelope, "type": "events_api", "accepts_response_payload": False,
                "retry_attempt": 0, "retry_reason": "",
                "payload": {"token": "verification", "team_id": TEAM, "api_app_id": "AHERMES01",
                            "type": "event_callback", "event_id": "Ev" + envelope[:10],
                            "event_time": int(time.time()), "event": event}}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:  # the app may be (re)connecting
            ws = self._ws
            if ws is not None and not ws.closed:
                asyncio.run_coroutine_threadsafe(ws.send_json(body), self._loop).result(10)
                with self._cond:
                    if self._cond.wait_for(lambda: envelope in self._acks, 5):
                        return envelope
            time.sleep(0.05)
        raise AssertionError("the Slack app never acknowledged the event")

    def drop(self) -> None:
        """Close the socket, as Slack does when it refreshes connections."""
        ws = self._ws
        if ws is not None:
            asyncio.run_coroutine_threadsafe(ws.close(), self._loop).result(10)

    def wait_posted(self, channel: str, n: int = 1, timeout: float = 30) -> list[dict[str, Any]]:
        def mine() -> list[dict[str, Any]]:
            return [p for p in self.posted if p.get("channel") == channel]

        with self._cond:
            if not self._cond.wait_for(lambda: len(mine()) >= n, timeout):
                raise AssertionError(f"{n} message(s) to {channel}: got {mine()}")
            return mine()

    def wait_uploads(self, n: int = 1, timeout: float = 30) -> list[dict[str, Any]]:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.uploads) >= n, timeout):
                raise AssertionError(f"{n} upload(s): got {self.uploads}")
            return list(self.uploads)

    def reset(self) -> None:
        """Forget what earlier tests posted (one fake serves a whole test module)."""
        with self._cond:
            self.posted.clear()
            self.uploads.clear()
            self.files.clear()

    # -- HTTP Events mode --------------------------------------------------------------------
    def envelope(self, event: dict[str, Any]) -> dict[str, Any]:
        return {"token": "verification", "team_id": TEAM, "api_app_id": "AHERMES01",
                "type": "event_callback", "event_id": "Ev" + uuid.uuid4().hex[:10],
                "event_time": int(time.time()), "event": event}


def deliver(url: str, body: dict[str, Any], *, secret: str = SIGNING_SECRET, retry: int = 0,
            timestamp: Optional[int] = None) -> tuple[int, str]:
    """POST ``body`` to a Request URL as Slack does: signed ``v0=HMAC-SHA256(secret,
    "v0:<timestamp>:<body>")``; ``retry`` > 0 adds Slack's retry headers. -> (status, text)."""
    raw = json.dumps(body).encode()
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + raw,
                      hashlib.sha256).hexdigest()
    headers = {"Content-Type": "application/json", "X-Slack-Request-Timestamp": stamp,
               "X-Slack-Signature": f"v0={digest}"}
    if retry:
        headers.update({"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"})
    request = urllib.request.Request(url, data=raw, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
