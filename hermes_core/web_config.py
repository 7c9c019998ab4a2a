"""Config sections of the web, browser and vision tools: ``web:``, ``browser:`` and
``auxiliary.vision`` (issue 23). Kept beside config.py so that file stays small; HermesConfig
holds one line for each.

Keys follow Hermes Agent: ``web.backend`` picks the provider, ``web.search_backend`` overrides it
for search; keys live in ``.env`` (``FIRECRAWL_API_KEY``, ``TAVILY_API_KEY``, ``EXA_API_KEY``,
``BRAVE_SEARCH_API_KEY``, ``SEARXNG_URL``, ``FIRECRAWL_API_URL``).
"""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)


def _listify(v: Any) -> Any:
    if v is None:
        return []
    return [t.strip() for t in v.split(",") if t.strip()] if isinstance(v, str) else v


class WebConfig(_Section):
    """web_search and web_extract. The SSRF guard refuses private addresses unless allow_private."""

    # Hermes' shared key: searxng, brave, tavily, exa, firecrawl, ddgs (or duckduckgo)
    backend: Optional[str] = None
    search_backend: Optional[str] = None  # beats ``backend`` for web_search
    search_url: Optional[str] = None  # the backend's endpoint (self-hosted instances, tests)
    allow_private: bool = False  # let web_extract and the browser reach loopback/private addresses
    allow_hosts: list[str] = Field(default_factory=list)  # "host" or "host:port" exempt from it
    timeout: float = Field(default=20.0, gt=0)  # seconds per page (connect + read)
    max_page_bytes: int = Field(default=5_000_000, ge=10_000)  # read at most this much of a page
    page_tokens: int = Field(default=3000, ge=200)  # per page in the tool result (head + tail)
    max_urls: int = Field(default=5, ge=1, le=20)
    max_redirects: int = Field(default=5, ge=0, le=20)
    user_agent: str = "Mozilla/5.0 (compatible; Hermes-Agent/0.1; +https://hermes-agent.local)"

    @field_validator("allow_hosts", mode="before")
    @classmethod
    def _hosts(cls, v: Any) -> Any:
        return _listify(v)

    def search_name(self) -> Optional[str]:
        name = self.search_backend or self.backend
        return name.strip().lower() if name and name.strip() else None


class BrowserConfig(_Section):
    """The browser_* tools: Playwright driving Chromium (Debian's, or one at ``cdp_url``)."""

    executable_path: Optional[str] = None  # default: /usr/bin/chromium, else chromium on PATH
    cdp_url: Optional[str] = None  # attach to a running Chrome (ws:// or http://host:9222)
    headless: bool = True
    idle_timeout: float = Field(default=300.0, gt=0)  # seconds without a browser call: closed
    action_timeout: float = Field(default=15.0, gt=0)  # seconds per navigation or action
    snapshot_tokens: int = Field(default=2000, ge=200)  # the accessibility tree in a result
    extra_args: list[str] = Field(default_factory=list)  # more Chromium flags

    @field_validator("extra_args", mode="before")
    @classmethod
    def _args(cls, v: Any) -> Any:
        return _listify(v)


class VisionModel(_Section):
    """``auxiliary.vision``: the model vision_analyze asks; unset fields: the main model's."""

    provider: Optional[str] = None
    model: Optional[str] = None
    base_url: Optional[str] = None
    api_key: Optional[str] = None
    timeout: float = Field(default=120.0, gt=0)
    max_image_bytes: int = Field(default=10_000_000, ge=10_000)
