"""Gateway test harness: a real GatewayRunner (real AIAgent, real SessionDB) on an event loop in a
background thread, optionally with the API server on an ephemeral loopback port and/or the Telegram
adapter pointed at ``FakeTelegram``. Agents talk to ``FakeProvider`` through OPENAI_BASE_URL."""
from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from hermes_core.config import HermesConfig
from tests.gateway.fake_telegram import FakeTelegram


REPO = Path(__file__).resolve().parents[2]
SESSION = "X-Hermes-Session-Id"
API_KEY = "test-api-key-0123456789"  # the in-process API server's key (it always requires one)


class Gateway:
    def __init__(self, *, telegram: Optional[FakeTelegram] = None, api: bool = False, api_key: str = API_KEY,
                 max_body_bytes: int = 1 << 20, busy_policy: str = "queue", max_cached_agents: int = 1000,
                 wrap_factory: Optional[Callable[[Any], Any]] = None,
                 api_options: Optional[dict[str, Any]] = None,
                 runner_options: Optional[dict[str, Any]] = None,
                 config: Optional[HermesConfig] = None, adapters: tuple = ()) -> None:
        """``wrap_factory(real_factory) -> factory`` lets a test observe or break agent creation;
        ``config`` is what the agents are built with (default: an empty config); ``adapters``
        are more platforms' adapters (tests/gateway/platforms)."""
        from gateway.access import AccessControl, PairingStore
        from gateway.platforms.api_server import APIServer
        from gateway.platforms.telegram import TelegramAdapter
        from gateway.runner import GatewayRunner, default_agent_factory
        from hermes_state import SessionDB

        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="gateway-loop", daemon=True)
        self._thread.start()
        self.db = SessionDB()
        adapters = list(adapters)  # other platforms' adapters, ready made (tests/gateway/platforms)
        if telegram is not None:
            adapters.append(TelegramAdapter(telegram.token, base_url=telegram.base_url, poll_timeout=1))
        factory = default_agent_factory(config or HermesConfig(), self.db)
        if wrap_factory is not None:
            factory = wrap_factory(factory)
        self.runner = GatewayRunner(session_db=self.db, agent_factory=factory,
                                    adapters=adapters, access=AccessControl(PairingStore()),
                                    busy_policy=busy_policy, max_workers=16, typing_interval=0.2,
                                    max_cached_agents=max_cached_agents, **(runner_options or {}))
        self.api_key = api_key
        self.api = APIServer(self.runner, "127.0.0.1", 0, key=api_key, max_body_bytes=max_body_bytes,
                             **(api_options or {})) if api else None
        self.call(self._start())

    async def _start(self) -> None:
        await self.runner.start()
        if self.api is not None:
            await self.api.start()

    @property
    def base_url(self) -> str:
        assert self.api is not None
        return f"http://127.0.0.1:{self.api.port}/v1"

    def call(self, coro: Any, timeout: float = 60) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def session_for(self, key: str) -> Optional[str]:
        return self.db.get_session_for_key(key)

    def stop(self) -> None:
        async def _stop() -> None:
            await self.runner.shutdown(drain_timeout=20)
            if self.api is not None:
                await self.api.stop()

        try:
            self.call(_stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(5)
            self.db.close()


@pytest.fixture
def provider_env(fake_provider: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Agents built by the gateway talk to the fake provider."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake_provider.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("HERMES_MODEL", "fake-model")
    return fake_provider


@pytest.fixture
def pg_store(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """This test's gateways (in-process and subprocesses) use a fresh PostgreSQL database."""
    monkeypatch.setenv("HERMES_DATABASE_URL", pg_url)
    return pg_url


@pytest.fixture
def fake_telegram() -> Any:
    fake = FakeTelegram().start()
    yield fake
    fake.stop()


@pytest.fixture
def make_gateway(provider_env: Any) -> Callable[..., Gateway]:
    made: list[Gateway] = []

    def make(**kwargs: Any) -> Gateway:
        gw = Gateway(**kwargs)
        made.append(gw)
        return gw

    yield make
    for gw in made:
        gw.stop()


class GatewayProcess:
    """``python -m hermes_cli.main gateway run`` as a real subprocess. Without ``API_SERVER_KEY`` in ``env_extra``
    the gateway generates its key into ``HERMES_HOME/.env``; ``self.key`` is read from there."""

    def __init__(self, home: Path, provider_url: str, *extra: str, api: bool = True,
                 preexec_fn: Optional[Callable[[], None]] = None, **env_extra: str) -> None:
        env = dict(os.environ, HERMES_HOME=str(home), OPENAI_BASE_URL=provider_url, OPENAI_API_KEY="test-key",
                   HERMES_MODEL="fake-model", PYTHONPATH=str(REPO), **env_extra)
        flags = ["--api-server", "--port", "0"] if api else []
        self.home = home
        self.proc = subprocess.Popen([sys.executable, "-m", "hermes_cli.main", "gateway", "run", *flags, *extra],
                                     cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=preexec_fn)
        lines: "queue.Queue[str]" = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=lambda: [lines.put(x) for x in self.proc.stdout], daemon=True).start()  # type: ignore[union-attr]
        threading.Thread(target=lambda: [self.stderr.append(x) for x in self.proc.stderr], daemon=True).start()  # type: ignore[union-attr]
        line = lines.get(timeout=60)
        assert line.startswith("READY"), line
        self.api = line.split("api=")[1].strip() if api else ""
        self.url = self.api + "/v1/chat/completions" if api else ""
        self.key = env_extra.get("API_SERVER_KEY") or self._key_from_env_file() if api else ""

    def _key_from_env_file(self) -> str:
        from dotenv import dotenv_values

        return str(dotenv_values(self.home / ".env").get("API_SERVER_KEY") or "")

    @property
    def port(self) -> int:
        return int(self.api.rsplit(":", 1)[1])

    def post_async(self, content: str, session: str) -> "queue.Queue[object]":
        out: "queue.Queue[object]" = queue.Queue()

        def run() -> None:
            req = urllib.request.Request(self.url, method="POST", data=json.dumps(
                {"model": "m", "messages": [{"role": "user", "content": content}]}).encode(),
                headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.key}",
                         SESSION: session})
            try:
                with urllib.request.urlopen(req, timeout=60) as resp:
                    out.put(json.loads(resp.read()))
            except Exception as exc:  # noqa: BLE001 - the test inspects it
                out.put(exc)

        threading.Thread(target=run, daemon=True).start()
        return out

    def terminate_and_wait(self) -> int:
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


@pytest.fixture
def gateway_process(hermes_home: Path, fake_provider: Any) -> Callable[..., GatewayProcess]:
    """Start gateway subprocesses against ``fake_provider``; each is stopped (SIGTERM) afterwards."""
    started: list[GatewayProcess] = []

    def start(*extra: str, preexec_fn: Optional[Callable[[], None]] = None, **env_extra: str) -> GatewayProcess:
        proc = GatewayProcess(hermes_home, fake_provider.base_url, *extra, preexec_fn=preexec_fn, **env_extra)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.terminate_and_wait()


def gateway_main(argv: list[str]) -> int:
    """``hermes gateway ...`` in this process, through the real command line."""
    from hermes_cli.main import main

    return main(["gateway", *argv])


def pairing_main(argv: list[str]) -> int:
    """``hermes pairing ...`` in this process, through the real command line."""
    from hermes_cli.main import main

    return main(["pairing", *argv])
