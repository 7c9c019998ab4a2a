"""The Anthropic provider plugin: Claude over the native Messages API.

Registered like any provider plugin; ``hermes_core.provider_table`` reads it, so `--provider
anthropic`, `hermes setup`, `hermes model`, `hermes auth` and fallback chains all know it. The SDK
is imported only when the first client is made.
"""
from __future__ import annotations

from typing import Any

ANTHROPIC_BASE_URL = "https://api.anthropic.com"


def _factory(settings: Any) -> Any:
    from agent.providers.anthropic.client import make_client

    return make_client(settings)


def _list_models(base_url: Any, api_key: Any, timeout: float) -> Any:
    from agent.providers.anthropic.models import list_models

    return list_models(base_url, api_key, timeout)


def register(ctx: Any) -> None:
    ctx.register_provider(
        "anthropic", _factory, summary="Claude on api.anthropic.com, needs ANTHROPIC_API_KEY",
        base_url=ANTHROPIC_BASE_URL, key_vars=("ANTHROPIC_API_KEY",), needs_key=True,
        default_model="claude-sonnet-4-5", url_vars=("ANTHROPIC_BASE_URL",), api="anthropic",
        aliases=("claude",), detect_vars=("ANTHROPIC_API_KEY",), rank=10,
        list_models=_list_models)
