"""web_search: which backend answers, and the tool over it.

Backends are plugins (``ctx.register_search_backend(name, factory, detect=[env vars])``, the
built-ins in ``tools.web.backends``). The backend is ``web.search_backend``, else ``web.backend``
(Hermes' keys), else the first built-in whose credentials are in the environment (``detect``).
A factory ``factory(web_config, environ) -> backend`` raises ``BackendUnavailable`` when it is
not set up (a key missing): then the tool is not offered, and its ``check`` says why.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Protocol

from tools.context import ToolContext, ToolError

MAX_RESULTS = 10
SNIPPET_CHARS = 300
SETTING_HINT = ("set web.backend (or web.search_backend) in config.yaml to one of {names}, and "
                "its key in HERMES_HOME/.env")


class BackendUnavailable(Exception):
    """The backend is not set up here (e.g. its API key is missing); the text says what to set."""


class SearchError(Exception):
    """The backend was asked and failed; the text says why (HTTP status, its message)."""


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str
    snippet: str

    def as_dict(self) -> dict:
        snippet = " ".join(self.snippet.split())
        if len(snippet) > SNIPPET_CHARS:
            snippet = snippet[:SNIPPET_CHARS].rsplit(" ", 1)[0] + "…"
        return {"title": " ".join(self.title.split()), "url": self.url, "snippet": snippet}


class Backend(Protocol):
    name: str

    def search(self, query: str, limit: int) -> list[SearchResult]: ...


def registrations() -> dict[str, Any]:
    """name -> the latest registration of each search backend (a later plugin wins)."""
    from hermes_core.plugin_api import REGISTRY

    return {reg.name: reg for reg in REGISTRY.of("search_backend")}


def choose(web: Any, environ: Mapping[str, str]) -> tuple[Optional[str], str]:
    """(backend name, how it was chosen) or (None, why there is none). Pure over its inputs."""
    regs = registrations()
    name = web.search_name() if web is not None else None
    if name:
        if name not in regs:
            return None, (f"web.backend {name!r} is not a search backend; known: "
                          f"{', '.join(sorted(regs)) or 'none'}")
        return name, "configured"
    for reg_name, reg in regs.items():
        if any(environ.get(var) for var in reg.options.get("detect", ())):
            return reg_name, "detected from " + "/".join(reg.options["detect"])
    return None, "no search backend is configured: " + SETTING_HINT.format(
        names=", ".join(sorted(regs)) or "none")


def open_backend(web: Any, environ: Optional[Mapping[str, str]] = None) -> Backend:
    """The configured backend, ready to search; BackendUnavailable says what to set."""
    environ = os.environ if environ is None else environ
    name, why = choose(web, environ)
    if name is None:
        raise BackendUnavailable(why)
    return registrations()[name].value(web, environ)


def _web_config(ctx: Optional[ToolContext]) -> Any:
    cfg = getattr(ctx, "config", None)
    if cfg is None:
        from hermes_core.config import load_config

        cfg = load_config()
    return cfg.web


def check() -> Optional[str]:
    """Why web_search is not offered here (None: a backend is usable)."""
    from hermes_core.config import shared_config

    try:
        open_backend(shared_config().web)
    except BackendUnavailable as exc:
        return str(exc)
    return None


def web_search(args: dict, ctx: ToolContext) -> str:
    query = str(args.get("query") or "").strip()
    if not query:
        raise ToolError("web_search: 'query' is empty")
    limit = max(1, min(MAX_RESULTS, int(args.get("limit") or 5)))
    try:
        backend = open_backend(_web_config(ctx))
    except BackendUnavailable as exc:
        raise ToolError(f"web_search: {exc}") from None
    try:
        results = backend.search(query, limit)
    except SearchError as exc:
        raise ToolError(f"web_search: the {backend.name} backend failed: {exc}") from None
    except Exception as exc:  # a third-party backend's bug is still that backend's failure
        raise ToolError(f"web_search: the {backend.name} backend failed: "
                        f"{type(exc).__name__}: {exc}") from None
    rows = [r.as_dict() for r in results[:limit] if r.url]
    out = {"backend": backend.name, "query": query, "results": rows}
    if not rows:
        out["note"] = "no results; try other words"
    return json.dumps(out, ensure_ascii=False)


SCHEMA = {"type": "object", "properties": {
    "query": {"type": "string", "description": "What to search for."},
    "limit": {"type": "integer", "description": f"Results, 1-{MAX_RESULTS} (default 5)."},
}, "required": ["query"]}
DESCRIPTION = "Search the web: title, URL and snippet per result. Read pages with web_extract."
