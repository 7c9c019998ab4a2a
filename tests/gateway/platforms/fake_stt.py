"""A loopback OpenAI-compatible speech-to-text endpoint (``POST /v1/audio/transcriptions``,
multipart), for the voice-note tests: answers ``transcript`` and keeps what it was sent."""
from __future__ import annotations

import asyncio
import threading
from typing import Any, Optional

from aiohttp import web


class FakeSTT:
    def __init__(self, transcript: str = "what is on my calendar today") -> None:
        self.transcript = transcript
        self.received: list[dict[str, Any]] = []
        self.port = 0
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._runner: Optional[web.AppRunner] = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _transcribe(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload = form.get("file")
        self.received.append({"model": form.get("model"),
                              "auth": request.headers.get("Authorization"),
                              "name": getattr(upload, "filename", None),
                              "data": upload.file.read() if upload is not None else b""})
        return web.json_response({"text": self.transcript})

    def start(self) -> "FakeSTT":
        ready = threading.Event()

        async def serve() -> None:
            app = web.Application()
            app.router.add_post("/v1/audio/transcriptions", self._transcribe)
            self._runner = web.AppRunner(app)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            ready.set()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.create_task(serve())
            self._loop.run_forever()

        threading.Thread(target=run, name="fake-stt", daemon=True).start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None and self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
