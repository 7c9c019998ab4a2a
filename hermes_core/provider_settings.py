"""Which provider a run talks to, with which endpoint, model and keys: CLI flags > environment >
config.yaml > the provider's defaults (SPEC §1). Nothing configured means the embedded model.

``resolve_provider`` is the main model's; ``resolve_entry`` one of ``fallback_providers`` or an
``auxiliary.*`` model (its own provider, endpoint and keys: the main model's ``model.base_url``
never leaks into another provider's). A provider's keys form a pool: its environment variable,
``<VAR>S=k1,k2`` (``OPENAI_API_KEYS``), ``model.api_keys`` and the keys ``hermes auth add`` stored.
"""
from __future__ import annotations

import os
from typing import Any, Mapping, Optional

from pydantic import BaseModel, Field

from hermes_core.config import ConfigError, HermesConfig
from hermes_core.provider_config import listify


class ProviderSettings(BaseModel):
    provider: str
    base_url: Optional[str]
    api_key: Optional[str]
    model: str  # "": none configured, the endpoint's list decides (agent.providers.models)
    context_length: Optional[int] = None
    model_path: Optional[str] = None
    key_var: Optional[str] = None  # where this provider's key is read from (named in errors)
    api_keys: list[str] = Field(default_factory=list)  # the whole pool, api_key first
    api: str = "openai"  # the provider's wire (provider_table.ProviderInfo.api)
    reasoning_effort: Optional[str] = None  # agent.reasoning_effort (Anthropic: thinking)


def _source(flag: Optional[str]) -> str:
    if flag:
        return "--provider"
    if os.environ.get("HERMES_PROVIDER"):
        return "HERMES_PROVIDER"
    return "model.provider in config.yaml"


def _lookup(name: Optional[str], source: str) -> Any:
    from hermes_core import provider_table as catalog

    try:
        return catalog.lookup(name)
    except catalog.UnknownProvider as exc:
        raise ConfigError(str(catalog.UnknownProvider(exc.name, exc.hint, source))) from None


def pool_keys(info: Any, env: Mapping[str, str], first: Optional[str],
              listed: Any = ()) -> list[str]:
    """Every key of a provider, ``first`` (the one a request starts with) first, no repeats:
    the environment's, ``<VAR>S``, the config's list, then the stored ones (auth.json)."""
    from hermes_core.auth_store import stored_keys

    keys = [first] + [env.get(v) for v in info.key_vars]
    keys += listify(env.get(info.pool_var) if info.pool_var else None)
    keys += listify(listed) + stored_keys(info.name)
    out: list[str] = []
    for key in keys:
        if key and key.strip() and key.strip() not in out:
            out.append(key.strip())
    return out


def _settings(info: Any, cfg: HermesConfig, base_url: Optional[str], keys: list[str],
              model: str, context_length: Optional[int], model_path: Optional[str]
              ) -> ProviderSettings:
    from hermes_core import provider_table as catalog

    if info.needs_key and not keys:
        raise ConfigError(catalog.missing_key_message(info))
    return ProviderSettings(provider=info.name, base_url=base_url,
                            api_key=keys[0] if keys else None,
                            model=model or info.default_model or "", context_length=context_length,
                            model_path=model_path, key_var=info.key_var, api_keys=keys,
                            api=info.api, reasoning_effort=cfg.agent.reasoning_effort)


def resolve_provider(
    cfg: Optional[HermesConfig] = None,
    *,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
    model: Optional[str] = None,
    provider: Optional[str] = None,
) -> ProviderSettings:
    """Arguments > environment > config.yaml > defaults; nothing configured means the local model.

    Raises ConfigError (nothing is sent) for an unknown provider name, a provider that needs a
    base URL or a key and has none: the message names what to set (hermes_core.provider_table)."""
    from hermes_core import provider_table as catalog

    cfg = cfg or HermesConfig()
    env, m = os.environ, cfg.model
    info = _lookup(provider or env.get("HERMES_PROVIDER") or m.provider, _source(provider))
    model = model or env.get("HERMES_MODEL") or m.default or getattr(m, "model", None) or ""
    if info is None:
        url = base_url or env.get("OPENAI_BASE_URL") or m.base_url
        info = catalog.detect(url, api_key or m.api_key, env)
    if info.name == "local":
        return ProviderSettings(provider="local", base_url=None, api_key=None,
                                model=model or catalog.LOCAL_MODEL, api="local",
                                context_length=m.context_length, model_path=m.path)
    base_url = base_url or catalog.url_from_env(info, env) or m.base_url or info.base_url
    if not base_url:
        raise ConfigError(catalog.missing_url_message(info))
    keys = pool_keys(info, env, catalog.key_from_env(info, env) or m.api_key, m.api_keys)
    if api_key:  # first; a key from elsewhere (--api-key) is the only one used
        keys = [api_key] + [k for k in keys if k != api_key] if api_key in keys else [api_key]
    return _settings(info, cfg, base_url, keys, model, m.context_length, m.path)


def resolve_entry(cfg: HermesConfig, entry: Any, main: ProviderSettings,
                  source: str) -> ProviderSettings:
    """A fallback or auxiliary model (``entry`` has provider/model/base_url/api_key[s]): unset
    fields are the main model's when it is the main provider, else that provider's own."""
    from hermes_core import provider_table as catalog

    name = getattr(entry, "provider", None) or main.provider
    info = _lookup(name, source)
    if info is None or info.name == main.provider and not getattr(entry, "base_url", None):
        same = getattr(entry, "api_key", None) is None
        return main.model_copy(update={
            "model": getattr(entry, "model", None) or main.model,
            "context_length": getattr(entry, "context_length", None) or (
                main.context_length if not getattr(entry, "model", None) else None),
            **({} if same else {"api_key": entry.api_key, "api_keys": [entry.api_key]})})
    if info.name == "local":
        return ProviderSettings(provider="local", base_url=None, api_key=None, api="local",
                                model=getattr(entry, "model", None) or catalog.LOCAL_MODEL)
    base_url = getattr(entry, "base_url", None) or catalog.url_from_env(info, os.environ) \
        or info.base_url
    if not base_url:
        raise ConfigError(f"{source}: {catalog.missing_url_message(info)}")
    keys = pool_keys(info, os.environ, getattr(entry, "api_key", None),
                     getattr(entry, "api_keys", ()))
    try:
        return _settings(info, cfg, base_url, keys, getattr(entry, "model", None) or "",
                         getattr(entry, "context_length", None), None)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
