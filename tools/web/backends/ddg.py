"""DuckDuckGo through the ``ddgs`` library: no key needed, so it is never picked automatically
(only ``web.backend: ddgs`` or ``duckduckgo`` selects it). ``ddgs`` has no endpoint setting, so
the tests check this adapter's reading of its rows and errors, not a live query.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from tools.web.search import BackendUnavailable, SearchError, SearchResult


def parse_ddgs(rows: Any) -> list[SearchResult]:
    """ddgs' text results (``title``, ``href``, ``body``) as ours. Pure."""
    out = []
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and row.get("href"):
            out.append(SearchResult(str(row.get("title") or ""), str(row["href"]),
                                    str(row.get("body") or "")))
    return out


@dataclass
class DDGSBackend:
    name: str
    engine: str  # ddgs' backend: "auto" (several engines) or "duckduckgo"
    client: Optional[Callable[[], Any]] = None  # builds a DDGS-like object (tests pass one)

    def search(self, query: str, limit: int) -> list[SearchResult]:
        from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

        make = self.client
        if make is None:
            from ddgs import DDGS

            make = lambda: DDGS(timeout=10)  # noqa: E731
        try:
            rows = make().text(query, max_results=limit, backend=self.engine)
        except RatelimitException as exc:
            raise SearchError(f"rate limited by the search engines ({exc}); try again later")
        except TimeoutException as exc:
            raise SearchError(f"timed out ({exc})") from None
        except DDGSException as exc:
            text = str(exc)
            if "no results" in text.lower():
                return []
            raise SearchError(text or type(exc).__name__) from None
        return parse_ddgs(rows)


def factory(engine: str) -> Callable[[Any, Mapping[str, str]], DDGSBackend]:
    def make(web: Any, environ: Mapping[str, str]) -> DDGSBackend:
        try:
            import ddgs  # noqa: F401
        except ImportError:
            raise BackendUnavailable("the ddgs library is not installed (pip install ddgs)"
                                     ) from None
        return DDGSBackend("ddgs" if engine == "auto" else engine, engine)
    return make
