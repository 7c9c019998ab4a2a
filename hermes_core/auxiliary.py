"""Which model a side task asks (issue 25): ``auxiliary.summary`` (compression's summaries; Hermes'
older name ``auxiliary.compression`` still works), ``auxiliary.vision`` (vision_analyze and
browser_vision) and ``auxiliary.review`` (the background skill review; Hermes' name
``auxiliary.background_review`` works too). The role's own name wins when both are set.

Each role has Hermes' keys ``provider``/``model``/``base_url``/``api_key``; a role with none of
them set (or ``provider: auto``/``main``, Hermes' way of saying "the main one") is the main model,
so nothing configured changes nothing. Any provider works, the plugin ones (``anthropic``) too:
the answer is a ``ProviderSettings`` the caller makes its client from. A role that names an
unknown provider, or one it cannot use (no key, no URL), is a ConfigError naming the key to fix.
"""
from __future__ import annotations

import os
from typing import Any, Optional

from hermes_core.config import ConfigError, HermesConfig
from hermes_core.provider_settings import ProviderSettings, resolve_entry

ROLES = ("summary", "vision", "review")
MAIN_WORDS = ("", "auto", "main")  # provider values meaning "the main model's provider"
# where `hermes config set auxiliary.compression.api_key` puts the key (.env, not config.yaml)
ENV_KEYS = {"summary": "HERMES_AUX_COMPRESSION_API_KEY"}
FIELDS = ("provider", "model", "base_url", "api_key")
ALIASES = {"summary": "compression", "review": "background_review"}  # Hermes' other names


def _fields(section: Any) -> dict[str, Optional[str]]:
    out: dict[str, Optional[str]] = {}
    for name in FIELDS:
        value = getattr(section, name, None)
        if isinstance(value, str):
            value = value.strip() or None
        out[name] = value
    if (out["provider"] or "").lower() in MAIN_WORDS:
        out["provider"] = None
    return out


def _configured(fields: dict[str, Optional[str]]) -> bool:
    return any(fields[k] for k in ("provider", "model", "base_url"))


def role_entry(cfg: HermesConfig, role: str) -> tuple[str, dict[str, Optional[str]]]:
    """(the dotted key, its fields) of ``role``: the role's own name set (``summary``,
    ``review``) wins over its alias (``compression``, ``background_review``)."""
    if role not in ROLES:
        raise ValueError(f"unknown auxiliary role {role!r}; known: {', '.join(ROLES)}")
    aux = cfg.auxiliary
    path, fields = f"auxiliary.{role}", _fields(getattr(aux, role))
    alias = ALIASES.get(role)
    if alias and not _configured(fields):
        other = _fields(getattr(aux, alias))
        if _configured(other) or other["api_key"]:
            path, fields = f"auxiliary.{alias}", other
    env_key = ENV_KEYS.get(role)
    if not fields["api_key"] and env_key and os.environ.get(env_key):
        fields["api_key"] = os.environ[env_key]
    return path, fields


def is_configured(cfg: HermesConfig, role: str) -> bool:
    """Whether ``auxiliary.<role>`` names a model, endpoint, provider or key of its own."""
    _, fields = role_entry(cfg, role)
    return _configured(fields) or bool(fields["api_key"])


class _Entry:
    """The shape ``resolve_entry`` reads (a fallback entry's attributes)."""

    def __init__(self, fields: dict[str, Optional[str]]) -> None:
        self.provider, self.model = fields["provider"], fields["model"]
        self.base_url, self.api_key = fields["base_url"], fields["api_key"]
        self.api_keys: list[str] = []
        self.context_length = None


def resolve_auxiliary(cfg: HermesConfig, role: str, main: ProviderSettings) -> ProviderSettings:
    """The settings ``role``'s requests use: ``main`` unless ``auxiliary.<role>`` says otherwise.

    An endpoint of its own (``base_url``) without a key of its own gets its provider's keys (the
    environment's, auth.json's), never the main model's ``--api-key``."""
    path, fields = role_entry(cfg, role)
    if not _configured(fields):
        if not fields["api_key"]:
            return main
        return main.model_copy(update={"api_key": fields["api_key"],
                                       "api_keys": [fields["api_key"]]})
    if not fields["provider"]:  # the main provider, another endpoint of it maybe; the embedded
        # model has no endpoint, so a URL beside it is an OpenAI-compatible server
        fields["provider"] = "custom" if main.provider == "local" and fields["base_url"] \
            else main.provider
    if fields["provider"] == main.provider and not fields["model"]:
        fields["model"] = main.model or None
    try:
        settings = resolve_entry(cfg, _Entry(fields), main, f"{path}.provider")
    except ConfigError as exc:
        raise ConfigError(str(exc) if path in str(exc) else f"{path}: {exc}") from None
    if not settings.model:
        raise ConfigError(f"{path}.model is not set and provider {settings.provider!r} has no "
                          f"default model; set {path}.model in config.yaml")
    return settings


def check_auxiliary(cfg: HermesConfig, main: ProviderSettings) -> None:
    """Every role resolved once, so junk in ``auxiliary:`` is refused when the agent is built,
    not in the middle of a compaction."""
    for role in ROLES:
        resolve_auxiliary(cfg, role, main)
