"""The fallback chain (issue 25): ``fallback_providers:`` in config.yaml, tried in order when the
active provider fails in a way retries cannot fix, and the primary again after
``fallback.cooldown`` seconds.

Moves on: 5xx and 429 after the loop's retries, connection refused and timeouts (after retries),
401/403 (a key the provider will not take), a model the endpoint does not know. Never on a
request's own fault (any other 4xx, an overflow: compression handles that one). The switch is said
once (a ``warning`` status the REPL and ``-z`` show, and the log); so is the way back. While on a
fallback, compression uses that model's window; the primary's (learned) window comes back with it.
``moves_on`` and ``Chain`` are pure; ``fall_back``/``restore_due`` apply them to an agent.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from agent.callbacks import StatusKind
from agent.error_classifier import ClassifiedError, ErrorKind

log = logging.getLogger("hermes.providers")

MOVES_ON = {ErrorKind.SERVER, ErrorKind.CONNECTION, ErrorKind.TIMEOUT, ErrorKind.AUTH,
            ErrorKind.RATE_LIMIT}
_MISSING_MODEL = ("model not found", "model_not_found", "does not exist", "no such model",
                  "unknown model", "not_found_error", "invalid model")


def moves_on(err: ClassifiedError) -> bool:
    """Whether this failure (already retried as far as it could be) sends the turn on."""
    if err.kind in MOVES_ON:
        return True
    if err.kind is not ErrorKind.CLIENT:
        return False
    low = (err.message or "").lower()
    return err.status == 404 or (err.status in (400, 422)
                                 and any(m in low and "model" in low for m in _MISSING_MODEL))


@dataclass
class Chain:
    """Where a chain stands: ``active`` 0 is the primary, ``n`` the n-th fallback."""

    size: int  # fallbacks configured
    cooldown: float
    active: int = 0
    since: float = 0.0  # when the primary was left
    tried: set[int] = field(default_factory=set)  # failed in this turn

    def next_after(self, failed: int) -> Optional[int]:
        """The next entry to try after ``failed`` failed (None: the chain is spent)."""
        self.tried.add(failed)
        return next((i for i in range(1, self.size + 1) if i not in self.tried), None)

    def due_back(self, now: float) -> bool:
        return self.active > 0 and now - self.since >= self.cooldown


class AgentChain:
    """An agent's chain: the primary's settings and client, the fallbacks' settings (resolved when
    first needed: a broken entry is skipped, said once)."""

    def __init__(self, agent: Any, clock: Callable[[], float] = time.monotonic) -> None:
        from hermes_core.provider_config import fallback_chain

        self.entries = fallback_chain(agent.config)
        self.state = Chain(len(self.entries), agent.config.fallback.cooldown)
        self.clock = clock
        self.primary: dict[str, Any] = {}
        self.resolved: dict[int, Any] = {}

    def settings(self, agent: Any, index: int) -> Optional[Any]:
        from hermes_core.config import ConfigError
        from hermes_core.provider_settings import resolve_entry

        if index not in self.resolved:
            main = self.primary.get("settings") or agent._provider_settings
            try:
                self.resolved[index] = resolve_entry(agent.config, self.entries[index - 1], main,
                                                     f"fallback_providers[{index - 1}]")
            except ConfigError as exc:
                agent.emit_status(StatusKind.WARNING, f"Fallback skipped: {exc}")
                self.resolved[index] = None
        return self.resolved[index]


def chain_of(agent: Any) -> Optional[AgentChain]:
    """The agent's chain (made on first use); None when no fallback is configured."""
    chain = getattr(agent, "_fallback", None)
    if chain is None:
        from hermes_core.provider_config import fallback_chain

        if not hasattr(agent, "_provider_settings") or not fallback_chain(agent.config):
            return None
        chain = agent._fallback = AgentChain(agent)
    return chain


def describe(settings: Any) -> str:
    from agent.providers.models import shown_url

    where = shown_url(settings.base_url) if settings.base_url else "the embedded model"
    return f"{settings.provider} ({settings.model or 'its default model'} at {where})"


def fall_back(agent: Any, err: ClassifiedError) -> bool:
    """Move the agent to the next provider of its chain after ``err``; False when there is none
    (or ``err`` is the request's own fault)."""
    chain = chain_of(agent)
    if chain is None or not moves_on(err):
        return False
    state = chain.state
    if state.active == 0:
        chain.primary = {"settings": agent._provider_settings, "client": agent._client,
                         "owned": agent._owns_client,
                         "window": getattr(agent.context_compressor, "context_length", None)}
        state.since = chain.clock()
    failed = agent._provider_settings
    while (index := state.next_after(state.active)) is not None:
        settings = chain.settings(agent, index)
        if settings is None:
            state.active = index
            continue
        state.active = index
        use_settings(agent, settings)
        note = (f"{describe(failed)} failed ({err.kind.value}: {agent.redact(err.message)[:120]});"
                f" falling back to {describe(settings)}.")
        log.warning("%s", note)
        agent.emit_status(StatusKind.WARNING, note)
        return True
    return False


def restore_due(agent: Any) -> None:
    """At a turn's start: back to the primary once the cooldown is over (said once)."""
    chain = getattr(agent, "_fallback", None)
    if chain is None:
        return
    chain.state.tried.clear()
    if not chain.state.due_back(chain.clock()):
        return
    primary = chain.primary
    chain.state.active = 0
    use_settings(agent, primary["settings"], window=primary["window"])
    agent._client, agent._owns_client = primary["client"], primary["owned"]
    note = f"Back on the primary provider {describe(primary['settings'])}."
    log.warning("%s", note)
    agent.emit_status(StatusKind.INFO, note)


def use_settings(agent: Any, settings: Any, window: Optional[int] = None) -> None:
    """Point the agent at another provider: its client, model and context window."""
    from agent.providers.models import settle
    from agent.providers.windows import window_for

    if agent._owns_client:
        agent.close()
    agent._client, agent._owns_client = None, False
    if not settings.model and settings.api != "local":
        settings = settle(settings)
    agent._provider_settings = settings
    agent.provider, agent.base_url = settings.provider, settings.base_url
    agent.api_key, agent.model = settings.api_key, settings.model
    agent._raw_body = settings.api != "local"
    size = window or settings.context_length or window_for(settings.model, settings.base_url)
    agent.learn_context_limit(size, lower_only=False, announce=False)
