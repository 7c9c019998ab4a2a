"""The ``web`` toolset: web_search (listed only when a search backend is usable) and
web_extract. Registered like any plugin (pyproject.toml, group hermes_agent.plugins)."""
from __future__ import annotations

from typing import Any

from tools.registry import ToolSpec
from tools.web import extract_tool, search


def register(ctx: Any) -> None:
    ctx.register_toolset("web", "search the web and read pages", default=True)
    ctx.register_tool(ToolSpec("web_search", search.DESCRIPTION, search.SCHEMA, search.web_search,
                               "web", check=search.check))
    ctx.register_tool(ToolSpec("web_extract", extract_tool.DESCRIPTION, extract_tool.SCHEMA,
                               extract_tool.web_extract, "web"))
