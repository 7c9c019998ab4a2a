"""Gateway test harness: a real GatewayRunner (real AIAgent, real SessionDB) on an event loop in a
background thread, optionally with the API server on an ephemeral loopback port and/or the Telegram
adapter pointed at ``FakeTelegram``. Agents talk to ``FakeProvider`` through OPENAI_BASE_URL."""
from __future__ import annotations

import asyncio
import threading
from typing import Any, Callable, Optional

import pytest

from agent.config import HermesConfig
from tests.gateway.fake_telegram import FakeTelegram


class Gateway:
    def __init__(self, *, telegram: Optional[FakeTelegram] = None, api: bool = False, api_key: Optional[str] = None,
                 max_body_bytes: int = 1 << 20, busy_policy: str = "queue", max_cached_agents: int = 1000,
                 wrap_factory: Optional[Callable[[Any], Any]] = None) -> None:
        """``wrap_factory(real_factory) -> factory`` lets a test observe or break agent creation."""
        from gateway.access import AccessControl, PairingStore
        from gateway.platforms.api_server import APIServer
        from gateway.platforms.telegram import TelegramAdapter
        from gateway.runner import GatewayRunner, default_agent_factory
        from hermes_state import SessionDB

        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="gateway-loop", daemon=True)
        self._thread.start()
        self.db = SessionDB()
        adapters = []
        if telegram is not None:
            adapters.append(TelegramAdapter(telegram.token, base_url=telegram.base_url, poll_timeout=1))
        factory = default_agent_factory(HermesConfig(), self.db)
        if wrap_factory is not None:
            factory = wrap_factory(factory)
        self.runner = GatewayRunner(session_db=self.db, agent_factory=factory,
                                    adapters=adapters, access=AccessControl(PairingStore()),
                                    busy_policy=busy_policy, max_workers=16, typing_interval=0.2,
                                    max_cached_agents=max_cached_agents)
        self.api = APIServer(self.runner, "127.0.0.1", 0, key=api_key, max_body_bytes=max_body_bytes) if api else None
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
