"""Credential pools (issue 25): several keys for one provider (``OPENAI_API_KEYS=k1,k2``,
``model.api_keys``, ``hermes auth add``; ``hermes_core.provider_settings.pool_keys`` gathers them).

A 429 moves the request to the next key at once (the provider limits each key on its own); a 401
or 403 parks the key for the rest of the process (it is dead, not busy). When every key of the
pool was tried for one request, the failure goes on as without a pool: retries with the
provider's Retry-After, then the fallback chain. Rings are process-wide, per provider and
endpoint, so a gateway's sessions share what was learned about a key. ``KeyRing`` is pure.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Optional

from agent.callbacks import StatusKind
from agent.error_classifier import ClassifiedError, ErrorKind


@dataclass
class KeyRing:
    keys: list[str]
    current: int = 0
    parked: set[str] = field(default_factory=set)
    tried: set[str] = field(default_factory=set)  # by the request in progress

    @property
    def key(self) -> Optional[str]:
        return self.keys[self.current] if self.keys else None

    def live(self) -> list[str]:
        return [k for k in self.keys if k not in self.parked]

    def rotate(self, dead: bool) -> Optional[str]:
        """The next key after the current one failed (``dead``: 401/403, parked); None when the
        pool has none left for this request."""
        failed = self.key
        if failed is None:
            return None
        self.tried.add(failed)
        if dead:
            self.parked.add(failed)
        for step in range(1, len(self.keys) + 1):
            index = (self.current + step) % len(self.keys)
            candidate = self.keys[index]
            if candidate not in self.parked and candidate not in self.tried:
                self.current = index
                return candidate
        return None


_rings: dict[tuple[str, str], KeyRing] = {}
_lock = threading.Lock()


def ring_for(settings: Any) -> Optional[KeyRing]:
    """The process's ring for these settings' provider and endpoint (None: a single key, or a
    turn host that is not an AIAgent and has no provider settings)."""
    keys = list(getattr(settings, "api_keys", None) or [])
    if len(keys) < 2:
        return None
    with _lock:
        key = (settings.provider, settings.base_url or "")
        ring = _rings.get(key)
        if ring is None or ring.keys != keys:
            ring = _rings[key] = KeyRing(keys, current=keys.index(settings.api_key)
                                         if settings.api_key in keys else 0)
        return ring


def new_request(agent: Any) -> None:
    """A request starts: every live key may be tried again; the agent uses the ring's key."""
    ring = ring_for(getattr(agent, "_provider_settings", None))
    if ring is None:
        return
    with _lock:
        ring.tried.clear()
        key = ring.key if ring.key not in ring.parked else next(iter(ring.live()), ring.key)
    _use_key(agent, key)


def rotate(agent: Any, err: ClassifiedError) -> bool:
    """After a 429 or 401/403: the agent moves to the pool's next key (True), said once."""
    if err.kind not in (ErrorKind.RATE_LIMIT, ErrorKind.AUTH):
        return False
    ring = ring_for(getattr(agent, "_provider_settings", None))
    if ring is None:
        return False
    with _lock:
        old = ring.key
        new = ring.rotate(dead=err.kind is ErrorKind.AUTH)
    if new is None:
        return False
    from hermes_core.config_edit import mask

    why = "rejected, parked" if err.kind is ErrorKind.AUTH else "rate limited"
    agent.emit_status(StatusKind.INFO,
                      f"{agent.provider} key {mask(old)} {why}; using {mask(new)}.")
    _use_key(agent, new)
    return True


def _use_key(agent: Any, key: Optional[str]) -> None:
    if key is None or key == agent.api_key:
        return
    if agent._owns_client:
        agent.close()
        agent._client, agent._owns_client = None, False
    agent.api_key = key
    agent._provider_settings = agent._provider_settings.model_copy(update={"api_key": key})
