"""web_search over each backend's real request/answer shape, served by fake APIs on loopback
(tests/web_server.py); which backend is chosen; failures that name the backend and the cause; a
backend from a third-party plugin; ddgs' adapter (ddgs has no endpoint setting)."""
from __future__ import annotations

import json

import pytest

from pathlib import Path

from hermes_core.config import load_config
from hermes_core.plugin_api import REGISTRY, PluginContext
from tests.web_server import SEARCH_HITS, WebServer
from tools.registry import ToolContext, ToolError, dispatch, get_tool_names
from tools.web.backends.ddg import DDGSBackend
from tools.web.search import SearchError, SearchResult, check

KEYS = {"brave": "BRAVE_SEARCH_API_KEY", "tavily": "TAVILY_API_KEY", "exa": "EXA_API_KEY",
        "firecrawl": "FIRECRAWL_API_KEY"}
PATHS = {"searxng": "/searxng", "brave": "/brave/search", "tavily": "/tavily/search",
         "exa": "/exa/search", "firecrawl": "/firecrawl"}


@pytest.fixture(scope="module")
def api():
    server = WebServer().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def no_search_keys(monkeypatch):
    for var in (*KEYS.values(), "BRAVE_API_KEY", "SEARXNG_URL", "FIRECRAWL_API_URL"):
        monkeypatch.delenv(var, raising=False)


def ctx_with(tmp_path, **web) -> ToolContext:
    """config.yaml says ``web`` (the tool's availability check reads the file, like agents)."""
    import os

    import yaml

    home = Path(os.environ["HERMES_HOME"])
    (home / "config.yaml").write_text(yaml.safe_dump({"web": web}))
    return ToolContext(cwd=tmp_path, config=load_config())


def search(ctx: ToolContext, query: str = "tide ledgers", limit: int = 2) -> dict:
    return json.loads(dispatch("web_search", {"query": query, "limit": limit}, ctx))


@pytest.mark.parametrize("name", ["searxng", "brave", "tavily", "exa", "firecrawl"])
def test_each_backend_request_and_answer(name, api, tmp_path, monkeypatch):
    if name in KEYS:
        monkeypatch.setenv(KEYS[name], f"key-for-{name}")
    out = search(ctx_with(tmp_path, backend=name, search_url=api.url(PATHS[name])))
    assert out["backend"] == name
    assert [(r["title"], r["url"], r["snippet"]) for r in out["results"]] == SEARCH_HITS
    sent = [r for r in api.api_requests if r["provider"] == name][-1]
    headers, body, query = sent["headers"], sent["json"] or {}, sent["query"]
    expected = {
        "searxng": lambda: query["q"] == ["tide ledgers"] and query["format"] == ["json"],
        "brave": lambda: headers["x-subscription-token"] == "key-for-brave"
        and query["count"] == ["2"],
        "tavily": lambda: headers["authorization"] == "Bearer key-for-tavily"
        and body["max_results"] == 2,
        "exa": lambda: headers["x-api-key"] == "key-for-exa" and body["numResults"] == 2,
        "firecrawl": lambda: headers["authorization"] == "Bearer key-for-firecrawl"
        and body == {"query": "tide ledgers", "limit": 2},
    }
    assert expected[name](), sent


def test_a_failing_backend_is_named_with_its_cause(api, tmp_path, monkeypatch):
    monkeypatch.setenv("BRAVE_SEARCH_API_KEY", "wrong")
    api.api_override["brave"] = (401, {"error": {"message": "Invalid subscription token"}})
    try:
        with pytest.raises(ToolError) as err:
            search(ctx_with(tmp_path, backend="brave", search_url=api.url("/brave/search")))
    finally:
        api.api_override.clear()
    assert str(err.value) == ("web_search: the brave backend failed: HTTP 401 (Invalid "
                              "subscription token); check BRAVE_SEARCH_API_KEY")
    with pytest.raises(ToolError, match="the searxng backend failed: cannot reach"):
        search(ctx_with(tmp_path, backend="searxng", search_url="http://127.0.0.1:9"))


def test_listed_only_when_a_backend_is_usable(hermes_home, tmp_path, monkeypatch):
    assert "web_search" not in get_tool_names()
    assert "set web.backend" in (check() or "")
    with pytest.raises(ToolError, match=r"'web_search' is unavailable: no search backend is "
                       r"configured: set web\."):
        search(ctx_with(tmp_path))
    (hermes_home / "config.yaml").write_text("web:\n  backend: tavily\n")
    assert check() == "the tavily search backend needs TAVILY_API_KEY in HERMES_HOME/.env"
    (hermes_home / "config.yaml").write_text("web:\n  backend: altavista\n")
    assert "'altavista' is not a search backend" in (check() or "")
    (hermes_home / "config.yaml").write_text("")
    monkeypatch.setenv("EXA_API_KEY", "k")  # no backend named: the key selects one
    assert check() is None and "web_search" in get_tool_names()


def test_a_plugin_backend(tmp_path):
    class Echo:
        name = "echo"

        def search(self, query, limit):
            return [SearchResult(f"about {query}", "https://echo.test/1", "x" * 900)]

    PluginContext("echo-plugin").register_search_backend("echo", lambda web, env: Echo())
    try:
        out = search(ctx_with(tmp_path, search_backend="echo", backend="brave"))
    finally:
        REGISTRY.drop_plugin("echo-plugin")
    assert out["backend"] == "echo" and out["results"][0]["title"] == "about tide ledgers"
    assert len(out["results"][0]["snippet"]) <= 301  # snippets are bounded


def test_ddgs_adapter_reads_rows_and_errors():
    from ddgs.exceptions import DDGSException, RatelimitException

    class Client:
        def __init__(self, outcome):
            self.outcome = outcome

        def text(self, query, max_results, backend):
            if isinstance(self.outcome, Exception):
                raise self.outcome
            return self.outcome

    rows = [{"title": "T", "href": "https://a.test", "body": "B"}, {"title": "no url"}]
    backend = DDGSBackend("ddgs", "auto", client=lambda: Client(rows))
    assert backend.search("q", 3) == [SearchResult("T", "https://a.test", "B")]
    assert DDGSBackend("ddgs", "auto", lambda: Client(DDGSException("No results found."))
                       ).search("q", 3) == []
    with pytest.raises(SearchError, match="rate limited"):
        DDGSBackend("ddgs", "auto", lambda: Client(RatelimitException("202 Ratelimit"))
                    ).search("q", 3)
