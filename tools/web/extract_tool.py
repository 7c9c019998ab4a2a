"""web_extract: pages (HTML, PDF, text) fetched through the SSRF guard and turned into markdown,
each within the per-page budget (``web.page_tokens``; head + tail, the rest in a file)."""
from __future__ import annotations

from typing import Any

from tools.context import ToolContext, ToolError
from tools.web.budget import fit
from tools.web.extract import ExtractError, extract
from tools.web.search import _web_config as web_config


def _urls(args: dict, limit: int) -> list[str]:
    raw = args.get("urls")
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(u, str) for u in raw):
        raise ToolError("web_extract: 'urls' must be a list of http(s) URLs")
    urls = list(dict.fromkeys(u.strip() for u in raw if u.strip()))
    if not urls:
        raise ToolError("web_extract: 'urls' is empty")
    if len(urls) > limit:
        raise ToolError(f"web_extract: at most {limit} URLs per call (web.max_urls); "
                        f"got {len(urls)}")
    return urls


def _section(ctx: ToolContext, url: str, page: Any, page_tokens: int) -> tuple[str, bool]:
    """(markdown of one page, ok)."""
    from tools.web.fetch import FetchError
    if isinstance(page, FetchError):
        return f"## {url}\nerror: {page}", False
    try:
        found = extract(page)
    except ExtractError as exc:
        return f"## {url}\nerror: {exc}", False
    head = [f"## {found.title or page.final_url}", f"URL: {page.final_url}"]
    if page.redirects:
        head[-1] += f" (redirected from {url})"
    if found.note:
        head.append(f"note: {found.note}")
    body = fit(ctx, page.final_url, found.title, found.text, page_tokens)
    return "\n".join(head) + "\n\n" + body, True


def web_extract(args: dict, ctx: ToolContext) -> str:
    web = web_config(ctx)
    urls = _urls(args, web.max_urls)
    from tools.web.fetch import FetchOptions, fetch_pages  # aiohttp only when used

    pages = fetch_pages(urls, FetchOptions.from_config(web))
    sections = [_section(ctx, url, page, web.page_tokens) for url, page in zip(urls, pages)]
    if not any(ok for _, ok in sections):
        lines = [text.split("\n", 1)[1].removeprefix("error: ") for text, _ in sections]
        pairs = zip(urls, lines)
        detail = lines[0] if len(lines) == 1 else "; ".join(f"{u}: {e}" for u, e in pairs)
        where = f"{urls[0]}: " if len(urls) == 1 else ""
        raise ToolError(f"web_extract: {where}{detail}")
    return "\n\n---\n\n".join(text for text, _ in sections)


SCHEMA = {"type": "object", "properties": {
    "urls": {"type": "array", "items": {"type": "string"}, "description": "http(s) URLs, up to 5."},
}, "required": ["urls"]}
DESCRIPTION = ("Fetch pages (HTML, PDF, text) as clean markdown of their main content. Long pages "
               "show head and tail; the full text is saved to a file for read_file.")
