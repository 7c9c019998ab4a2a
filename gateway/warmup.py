"""Ready means warm: pay a turn's one-time costs before the gateway answers ``/health``.

Why: the first turn after a start used to wait ~1.2 s longer than the next ones (``import openai``,
the TLS context, the tool registry, the prompt pieces, the store's first query), so a burst right
after a restart saw a p99 in seconds. ``warm_up`` runs once, before the platforms connect and before
the API server listens; it builds one agent the way a turn does (never storing it, never calling the
provider) and drops it. It never fails the start: a step that raises is logged and the turn pays for
it later.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

log = logging.getLogger("gateway.warmup")


@dataclass
class WarmUp:
    """What the warm-up loaded and what each step cost (reported in ``/health/detailed``)."""

    seconds: float = 0.0
    steps: dict[str, float] = field(default_factory=dict)  # step -> seconds
    failed: dict[str, str] = field(default_factory=dict)  # step -> why

    def as_dict(self) -> dict[str, Any]:
        return {"done": True, "seconds": round(self.seconds, 3),
                "steps": {k: round(v, 3) for k, v in self.steps.items()},
                "failed": dict(self.failed)}


def _touch_client(client: Any) -> None:
    """The SDK client and what its first request imports lazily (the chat resource, ~0.3 s;
    the IDNA codec httpx uses for host names)."""
    client.chat.completions  # noqa: B018
    "localhost".encode("idna")


def _warm_client_pool(agent: Any) -> None:
    """Put one ready client in the process's pool for the agents' endpoint: the first turn borrows
    it."""
    from agent.providers.clients import pool_of

    pool = pool_of(agent._active_settings())
    client = pool.borrow()
    try:
        _touch_client(client)
    finally:
        pool.give_back(client)


def warm_up(agent_factory: Callable[..., Any], session_db: Any,
            platform: str = "api_server") -> WarmUp:
    """Load what a turn needs; blocking (run it in a thread)."""
    report = WarmUp()
    start = time.perf_counter()
    agent: Any = None

    def step(name: str, fn: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - a warm-up failure must not stop the gateway
            report.failed[name] = f"{type(exc).__name__}: {exc}"
            log.warning("warm-up step %s failed (the first turn will pay for it): %s", name, exc)
            return None
        finally:
            report.steps[name] = time.perf_counter() - t0

    def sdk() -> None:
        import run_agent

        run_agent.OpenAI  # noqa: B018 - the lazy import a turn would do (~1 s)

    def tls() -> None:
        from agent.providers.openai_compat import shared_ssl_context

        shared_ssl_context()

    step("sdk", sdk)
    step("tls", tls)
    # tools, compressor
    agent = step("agent", lambda: agent_factory(session_id=None, platform=platform))
    if agent is not None:
        # persona, context files, memory, skills index: nothing stored
        step("prompt", agent.fixed_prompt)
        # the embedded model loads on its first turn
        if getattr(agent, "provider", None) != "local":
            step("client", lambda: _warm_client_pool(agent))
        step("close", agent.close)
    step("store", lambda: session_db.list_sessions(limit=1))
    report.seconds = time.perf_counter() - start
    log.info("warm-up done in %.2fs (%s)", report.seconds,
             ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in report.steps.items()))
    return report
