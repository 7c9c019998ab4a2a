"""Config sections of providers beyond the main model (issue 25): the fallback chain and the
auxiliary models. Kept beside config.py so that file stays small; HermesConfig holds a line each.

Hermes' names: ``fallback_providers:`` (a list of ``{provider, model, base_url?, api_key?}``,
tried in order) and its older single ``fallback_model:``; ``fallback.cooldown`` (seconds on a
fallback before the primary is tried again); ``auxiliary.summary|vision|review`` (provider/model of
the side tasks; ``auxiliary.compression`` is the older name of ``summary``).
"""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)


def listify(v: Any) -> Any:
    """``a,b`` or a list -> a list of stripped strings (None -> [])."""
    if v is None:
        return []
    if isinstance(v, str):
        return [t.strip() for t in v.split(",") if t.strip()]
    return v


class FallbackEntry(_Section):
    """One provider of the chain; ``"openrouter:some/model"`` is short for provider + model."""

    provider: str
    model: Optional[str] = None
    base_url: Optional[str] = None
    api_key: Optional[str] = None
    api_keys: list[str] = Field(default_factory=list)
    context_length: Optional[int] = Field(default=None, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, v: Any) -> Any:
        if isinstance(v, str):
            name, _, model = v.partition(":")
            return {"provider": name.strip(), "model": model.strip() or None}
        return v

    @field_validator("api_keys", mode="before")
    @classmethod
    def _keys(cls, v: Any) -> Any:
        return listify(v)


class FallbackConfig(_Section):
    cooldown: float = Field(default=300.0, ge=0)  # seconds on a fallback before the primary again


class AuxModel(_Section):
    """A side task's model: unset fields are the main model's (provider, endpoint, key)."""

    provider: Optional[str] = None
    model: Optional[str] = None
    base_url: Optional[str] = None
    api_key: Optional[str] = None
    timeout: Optional[float] = Field(default=None, gt=0)

    @property
    def configured(self) -> bool:
        return bool(self.provider or self.model or self.base_url or self.api_key)


def fallback_chain(cfg: Any) -> list[FallbackEntry]:
    """``fallback_providers`` then the older ``fallback_model`` (when it names another one)."""
    chain = list(getattr(cfg, "fallback_providers", None) or [])
    legacy = getattr(cfg, "fallback_model", None)
    if isinstance(legacy, FallbackEntry) and legacy.provider and legacy not in chain:
        chain.append(legacy)
    return chain
