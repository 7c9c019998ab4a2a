"""The client an agent talks through, chosen by its provider's wire (``ProviderSettings.api``).

``openai``: the ``openai`` SDK (through ``run_agent.OpenAI``, the seed's patch point); any other
wire: the factory its provider plugin registered (``ctx.register_provider(name, factory)``), whose
client answers ``chat.completions.create`` with OpenAI shapes (Anthropic's does). Clients are lent
per request from the process's pools (``client_pool``), one pool per provider, endpoint and key.
"""
from __future__ import annotations

from typing import Any

from agent.providers.client_pool import ClientPool, keyed_pool, pool_for


def _openai_cls() -> Any:
    import run_agent  # the seed patches run_agent.OpenAI

    return run_agent.OpenAI


def make_client(settings: Any) -> Any:
    """A new client for ``settings`` (a ``ProviderSettings``; not the embedded model's)."""
    if settings.api == "openai":
        from agent.providers.openai_compat import make_openai_client

        return make_openai_client(_openai_cls(), settings.base_url, settings.api_key)
    from hermes_core.provider_table import plugin_client

    return plugin_client(settings)


def pool_of(settings: Any) -> ClientPool:
    """The process's pool of clients for these settings."""
    if settings.api == "openai":
        return pool_for(_openai_cls(), settings.base_url, settings.api_key)
    key = ("plugin", settings.provider, settings.base_url, settings.api_key,
           settings.reasoning_effort)
    return keyed_pool(key, lambda: make_client(settings))
