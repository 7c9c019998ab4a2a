"""Slack's HTTP Events mode: Slack POSTs every event to a public URL (the app's Request URL,
``https://<your host>/slack/events``) instead of pushing it down a Socket Mode WebSocket. For
workspaces where Socket Mode is not allowed, or many gateways behind one load balancer.

The server is slack-bolt's own aiohttp app (``AsyncApp.web_app``), run on its own port so it
never shares a listener (or its body limits) with the API server. bolt answers Slack's
``url_verification`` challenge, and checks every request's ``X-Slack-Signature`` (HMAC-SHA256 of
``v0:<X-Slack-Request-Timestamp>:<body>`` with the signing secret) and that the timestamp is
within five minutes: anything else gets 401 and never reaches a listener. Retries
(``X-Slack-Retry-Num``, sent when an answer took over three seconds) are acknowledged like
the first delivery; the adapter drops the repeated event, so it is answered once."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Optional

log = logging.getLogger("gateway.slack")

DEFAULT_PATH = "/slack/events"
DEFAULT_PORT = 3000


@dataclass(frozen=True)
class HttpSettings:
    signing_secret: str
    host: str = "127.0.0.1"  # behind the HTTPS reverse proxy Slack reaches; 0.0.0.0 for all
    port: int = DEFAULT_PORT  # 0: any free port (tests)
    path: str = DEFAULT_PATH


class EventsServer:
    """Serves one bolt app's Request URL until ``stop``."""

    def __init__(self, app: Any, settings: HttpSettings) -> None:
        self.app, self.settings = app, settings
        self.port = 0
        self._runner: Optional[Any] = None

    async def start(self) -> None:
        from aiohttp import web

        web_app = self.app.web_app(path=self.settings.path, port=self.settings.port)
        self._runner = web.AppRunner(web_app, shutdown_timeout=2, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.settings.host, self.settings.port)
        try:
            await site.start()
        except OSError as exc:
            await self.stop()
            raise RuntimeError(f"Slack HTTP events: cannot listen on {self.settings.host}:"
                               f"{self.settings.port}: {exc.strerror or exc}; set "
                               "gateway.slack.port to a free port") from None
        bound = self._runner.addresses  # port 0: the one the system chose
        self.port = int(bound[0][1]) if bound else self.settings.port
        log.info("slack: HTTP events on %s:%d%s", self.settings.host, self.port,
                 self.settings.path)

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
