"""The HTTP search APIs: SearXNG (JSON), Brave, Tavily, Exa and Firecrawl.

Each backend is a request shape plus a ``parse_<name>(data) -> [SearchResult]`` (pure: tested on
the APIs' answer shapes). The endpoint is the official one unless ``web.search_url`` (or the
provider's own variable, ``SEARXNG_URL`` / ``FIRECRAWL_API_URL``) names another: self-hosted
instances and the tests' loopback fakes. These endpoints are the user's configuration, not URLs
the model chose, so the SSRF guard does not apply to them (a SearXNG is often on the LAN).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

from tools.web.search import BackendUnavailable, SearchError, SearchResult

if TYPE_CHECKING:
    import httpx

TIMEOUT = 20.0


def _items(value: Any) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _result(item: dict, title: str, url: str, *snippets: str) -> SearchResult:
    text = next((str(item[k]) for k in snippets if isinstance(item.get(k), str) and item[k]), "")
    return SearchResult(str(item.get(title) or ""), str(item.get(url) or ""), text)


def parse_searxng(data: Any) -> list[SearchResult]:
    return [_result(i, "title", "url", "content") for i in _items((data or {}).get("results"))]


def parse_brave(data: Any) -> list[SearchResult]:
    web = (data or {}).get("web") or {}
    return [_result(i, "title", "url", "description") for i in _items(web.get("results"))]


def parse_tavily(data: Any) -> list[SearchResult]:
    return [_result(i, "title", "url", "content") for i in _items((data or {}).get("results"))]


def parse_exa(data: Any) -> list[SearchResult]:
    out = []
    for item in _items((data or {}).get("results")):
        highlights = item.get("highlights")
        if isinstance(highlights, list) and highlights:
            item = {**item, "highlights": " ".join(str(h) for h in highlights)}
        out.append(_result(item, "title", "url", "highlights", "summary", "text", "snippet"))
    return out


def parse_firecrawl(data: Any) -> list[SearchResult]:
    found = (data or {}).get("data")
    if isinstance(found, dict):  # v2: {"data": {"web": [...], "news": [...]}}
        found = found.get("web")
    return [_result(i, "title", "url", "description", "markdown") for i in _items(found)]


def _error_text(resp: httpx.Response) -> str:
    try:
        data = resp.json()
    except ValueError:
        return resp.text.strip()[:200]
    if isinstance(data, dict):
        err = data.get("error") or data.get("message") or data.get("detail")
        if isinstance(err, dict):
            err = err.get("message") or err.get("detail")
        if err:
            return str(err)[:200]
    return resp.text.strip()[:200]


@dataclass
class HTTPBackend:
    """One API: where to send the query, how, and how to read the answer."""

    name: str
    url: str
    key_env: Optional[str]
    key: Optional[str]
    build: Callable[[str, int, Optional[str]], dict]  # -> httpx.request kwargs
    parse: Callable[[Any], list[SearchResult]]

    def search(self, query: str, limit: int) -> list[SearchResult]:
        import httpx  # here, not at import: the toolset registers on every start

        try:
            resp = httpx.request(url=self.url, timeout=TIMEOUT, follow_redirects=True,
                                 **self.build(query, limit, self.key))
        except httpx.TimeoutException:
            raise SearchError(f"no answer from {self.url} within {TIMEOUT:g} s") from None
        except httpx.HTTPError as exc:
            raise SearchError(f"cannot reach {self.url}: {exc}") from None
        if resp.status_code in (401, 403):
            fix = f"; check {self.key_env}" if self.key_env else ""
            raise SearchError(f"HTTP {resp.status_code} ({_error_text(resp)}){fix}")
        if resp.status_code >= 400:
            raise SearchError(f"HTTP {resp.status_code} ({_error_text(resp)})")
        try:
            data = resp.json()
        except ValueError:
            raise SearchError(f"the answer from {self.url} is not JSON") from None
        if not isinstance(data, dict):
            raise SearchError(f"unexpected answer from {self.url} (not a JSON object)")
        return self.parse(data)


def _key(environ: Mapping[str, str], *names: str) -> Optional[str]:
    return next((environ[n] for n in names if environ.get(n)), None)


def _require(name: str, key: Optional[str], var: str) -> str:
    if not key:
        raise BackendUnavailable(f"the {name} search backend needs {var} in HERMES_HOME/.env")
    return key


def searxng(web: Any, environ: Mapping[str, str]) -> HTTPBackend:
    base = web.search_url or environ.get("SEARXNG_URL")
    if not base:
        raise BackendUnavailable("the searxng search backend needs SEARXNG_URL (in "
                                 "HERMES_HOME/.env) or web.search_url: your instance's address")
    url = base.rstrip("/") + ("" if base.rstrip("/").endswith("/search") else "/search")
    return HTTPBackend("searxng", url, None, None, lambda q, n, k: {
        "method": "GET", "params": {"q": q, "format": "json"}}, parse_searxng)


def brave(web: Any, environ: Mapping[str, str]) -> HTTPBackend:
    key = _require("brave", _key(environ, "BRAVE_SEARCH_API_KEY", "BRAVE_API_KEY"),
                   "BRAVE_SEARCH_API_KEY")
    url = web.search_url or "https://api.search.brave.com/res/v1/web/search"
    return HTTPBackend("brave", url, "BRAVE_SEARCH_API_KEY", key, lambda q, n, k: {
        "method": "GET", "params": {"q": q, "count": n},
        "headers": {"X-Subscription-Token": k or "", "Accept": "application/json"}}, parse_brave)


def tavily(web: Any, environ: Mapping[str, str]) -> HTTPBackend:
    key = _require("tavily", _key(environ, "TAVILY_API_KEY"), "TAVILY_API_KEY")
    url = web.search_url or "https://api.tavily.com/search"
    return HTTPBackend("tavily", url, "TAVILY_API_KEY", key, lambda q, n, k: {
        "method": "POST", "json": {"query": q, "max_results": n},
        "headers": {"Authorization": f"Bearer {k}"}}, parse_tavily)


def exa(web: Any, environ: Mapping[str, str]) -> HTTPBackend:
    key = _require("exa", _key(environ, "EXA_API_KEY"), "EXA_API_KEY")
    url = web.search_url or "https://api.exa.ai/search"
    return HTTPBackend("exa", url, "EXA_API_KEY", key, lambda q, n, k: {
        "method": "POST", "json": {"query": q, "numResults": n, "contents": {"highlights": True}},
        "headers": {"x-api-key": k or ""}}, parse_exa)


def firecrawl(web: Any, environ: Mapping[str, str]) -> HTTPBackend:
    base = web.search_url or environ.get("FIRECRAWL_API_URL")
    key = _key(environ, "FIRECRAWL_API_KEY")
    if not base:  # a self-hosted instance may run without a key (Hermes' rule)
        _require("firecrawl", key, "FIRECRAWL_API_KEY")
    url = (base or "https://api.firecrawl.dev").rstrip("/")
    if not url.endswith("/search"):
        url += "/v1/search"
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return HTTPBackend("firecrawl", url, "FIRECRAWL_API_KEY", key, lambda q, n, k: {
        "method": "POST", "json": {"query": q, "limit": n}, "headers": headers}, parse_firecrawl)
