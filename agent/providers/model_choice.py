"""Choosing a model (issue 25): what ``hermes model`` and the REPL's ``/model`` share. The list is
the endpoint's own (``probe_provider``: OpenAI's ``/models`` or the plugin's, Anthropic's list);
a switch takes the new model's context window (the endpoint's stated one first, else the family's)
unless the window was pinned in config."""
from __future__ import annotations

from typing import Any, Optional

from agent.providers.models import Probe, probe_provider


def endpoint_models(settings: Any) -> Optional[Probe]:
    """The endpoint's model list (None: the embedded model, which has one model)."""
    if settings.provider == "local" or not settings.base_url:
        return None
    return probe_provider(settings.provider, settings.base_url, settings.api_key)


def list_lines(found: Optional[Probe], current: str) -> list[str]:
    """The list as shown: ``*`` marks the current model; a window when the endpoint states it."""
    if found is None:
        return [f"* {current} (the embedded model)"]
    if not found.ids:
        return [f"{found.url} lists no models ({found.error or 'empty list'}); the current one "
                f"is {current or 'not set'}"]
    out = []
    for i, name in enumerate(found.ids, 1):
        window = found.windows.get(name)
        extra = f"  ({window:,} tokens)" if window else ""
        out.append(f"{'*' if name == current else ' '} {i:>2}. {name}{extra}")
    return out


def switch_model(agent: Any, name: str) -> int:
    """The agent uses ``name`` from its next request; returns the context window it now has."""
    from agent.providers.windows import window_for

    agent.model = name
    agent._provider_settings = agent._provider_settings.model_copy(update={"model": name})
    if not agent._context_length_pinned:
        agent.learn_context_limit(window_for(name, agent.base_url), lower_only=False,
                                   announce=False)
    return getattr(agent.context_compressor, "context_length", 0) or 0
