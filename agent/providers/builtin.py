"""The built-in providers, registered like any provider plugin (``hermes_core.provider_table``
reads them): the embedded model, any OpenAI-compatible URL, OpenAI and OpenRouter.

Their clients are the ``openai`` SDK's (``api="openai"``): the agent drives those itself, through
the process's client pool and the seed's patch point ``run_agent.OpenAI``; the factory here is what
other callers use (the vision tool, ``hermes model``). Nothing heavy is imported until a factory
is called.
"""
from __future__ import annotations

from typing import Any

from hermes_core.provider_table import LOCAL_MODEL, OPENAI_BASE_URL, OPENROUTER_BASE_URL


def openai_client(settings: Any) -> Any:
    """An ``openai.OpenAI`` for these settings (SDK retries off: callers retry themselves)."""
    import openai

    from agent.providers.openai_compat import make_openai_client

    return make_openai_client(openai.OpenAI, settings.base_url, settings.api_key)


def local_client(settings: Any) -> Any:
    from agent.providers.local import LocalClient

    return LocalClient(model_path=getattr(settings, "model_path", None))


def register(ctx: Any) -> None:
    ctx.register_provider("local", local_client, summary="the embedded model, offline, no key",
                          default_model=LOCAL_MODEL, api="local", rank=0, url_vars=(),
                          aliases=("embedded",))
    ctx.register_provider("custom", openai_client,
                          summary="any OpenAI-compatible URL: vLLM, llama.cpp, Ollama, …",
                          key_vars=("OPENAI_API_KEY", "OPENROUTER_API_KEY"), needs_base_url=True,
                          rank=1)
    ctx.register_provider("openai", openai_client, summary="api.openai.com, needs OPENAI_API_KEY",
                          base_url=OPENAI_BASE_URL, key_vars=("OPENAI_API_KEY",), needs_key=True,
                          default_model="gpt-4o-mini", rank=2)
    ctx.register_provider("openrouter", openai_client,
                          summary="openrouter.ai, needs OPENROUTER_API_KEY",
                          base_url=OPENROUTER_BASE_URL, key_vars=("OPENROUTER_API_KEY",),
                          needs_key=True, default_model="anthropic/claude-sonnet-4", rank=3)
