"""The built-in search backends, registered like any plugin's (``ctx.register_search_backend``).

``detect``: the environment variables whose presence selects a backend when the config names
none, in Hermes' order of preference (Firecrawl first).
"""
from __future__ import annotations

from typing import Any


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    from tools.web.backends import apis, ddg

    ctx.register_search_backend("firecrawl", apis.firecrawl,
                                detect=("FIRECRAWL_API_KEY", "FIRECRAWL_API_URL"))
    ctx.register_search_backend("tavily", apis.tavily, detect=("TAVILY_API_KEY",))
    ctx.register_search_backend("exa", apis.exa, detect=("EXA_API_KEY",))
    ctx.register_search_backend("brave", apis.brave,
                                detect=("BRAVE_SEARCH_API_KEY", "BRAVE_API_KEY"))
    ctx.register_search_backend("searxng", apis.searxng, detect=("SEARXNG_URL",))
    ctx.register_search_backend("ddgs", ddg.factory("auto"))
    ctx.register_search_backend("duckduckgo", ddg.factory("duckduckgo"))
