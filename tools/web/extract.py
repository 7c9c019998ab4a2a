"""A fetched page -> clean text for the model: main content of HTML (trafilatura), PDF text
(pypdf), plain text and JSON as they are; anything else is named, never dumped.

trafilatura was measured against the test articles in ``bench/web.py`` (main text recovered,
boilerplate kept out); when it finds no main content (a login form, a link list) the page's
visible text is used instead, so the model still sees what is there.
"""
from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional


MAX_PDF_PAGES = 300
TEXT_TYPES = ("text/plain", "text/markdown", "text/csv", "application/json", "text/xml",
              "application/xml", "application/ld+json")
HTML_TYPES = ("text/html", "application/xhtml+xml")
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.I | re.S)

logging.getLogger("trafilatura").setLevel(logging.ERROR)


class ExtractError(Exception):
    """The page arrived but holds nothing readable; the text says what it is."""


@dataclass
class Extracted:
    title: str
    text: str
    kind: str  # "article", "page text", "pdf", "text"
    note: str = ""  # e.g. the body was cut at max_page_bytes


if TYPE_CHECKING:  # aiohttp is imported only when a page is fetched
    from tools.web.fetch import Fetched


def _sniff(page: Fetched) -> str:
    head = page.body[:512].lstrip().lower()
    if head.startswith(b"%pdf-"):
        return "application/pdf"
    if head.startswith((b"<!doctype html", b"<html")) or b"<body" in head or b"<head" in head:
        return "text/html"
    return page.content_type


def _title_of(html: str, body: bytes) -> str:
    from trafilatura import extract_metadata

    try:
        meta = extract_metadata(html)
        if meta is not None and meta.title:
            return str(meta.title).strip()
    except Exception:  # metadata is a nicety; never fail a page for it
        pass
    m = _TITLE.search(body[:200_000])
    return " ".join(m.group(1).decode("utf-8", "replace").split()) if m else ""


def html_to_markdown(html: str, url: Optional[str] = None) -> tuple[str, str]:
    """(markdown, kind) of an HTML page: its main content, else all of its visible text."""
    import trafilatura

    text = trafilatura.extract(html, url=url, output_format="markdown", include_comments=False,
                               include_tables=True, include_links=False, include_images=False,
                               deduplicate=True)
    if text and text.strip():
        return text.strip(), "article"
    rest = trafilatura.html2txt(html) or ""
    return " ".join(rest.split()) if rest.strip() else "", "page text"


def pdf_to_text(body: bytes) -> tuple[str, int]:
    """(text, pages) of a PDF; ExtractError when it cannot be read."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(body))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ExtractError("the PDF is encrypted with a password")
        parts = []
        for n, pdf_page in enumerate(reader.pages[:MAX_PDF_PAGES], start=1):
            text = (pdf_page.extract_text() or "").strip()
            if text:
                parts.append(f"[page {n}]\n{text}")
        return "\n\n".join(parts), len(reader.pages)
    except ExtractError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ExtractError(f"the PDF cannot be read ({type(exc).__name__}: {exc})") from None


def _cut_note(page: Fetched, limit: int) -> str:
    if not page.truncated:
        return ""
    declared = page.declared_length or 0  # (a compressed body declares its packed size)
    size = f" of {declared:,} bytes" if declared > limit else ""
    return f"only the first {limit:,} bytes{size} were read (web.max_page_bytes)"


def extract(page: Fetched) -> Extracted:
    """Readable text of a fetched page; ExtractError for an error status or unreadable content."""
    if page.status >= 400:
        raise ExtractError(f"the server answered HTTP {page.status}")
    kind = _sniff(page)
    note = _cut_note(page, len(page.body))
    if kind in HTML_TYPES or kind == "":
        html = page.text()
        text, how = html_to_markdown(html, page.final_url)
        if not text:
            raise ExtractError("the page has no readable text (it may need a browser: "
                               "browser_navigate renders scripts)")
        return Extracted(_title_of(html, page.body), text, how, note)
    if kind == "application/pdf":
        if page.truncated:
            raise ExtractError(f"the PDF is larger than web.max_page_bytes ({len(page.body):,} "
                               "bytes); raise it to read this file")
        text, pages = pdf_to_text(page.body)
        if not text:
            raise ExtractError(f"the PDF ({pages} pages) has no text layer (scanned images?)")
        more = f"; first {MAX_PDF_PAGES} of {pages} pages" if pages > MAX_PDF_PAGES else ""
        return Extracted("", text, "pdf", f"{pages} pages{more}")
    if kind in TEXT_TYPES or kind.startswith("text/"):
        return Extracted("", page.text().strip(), "text", note)
    what = kind or "unknown type"
    hint = "; use vision_analyze with this URL" if kind.startswith("image/") else ""
    raise ExtractError(f"not a text document ({what}, {len(page.body):,} bytes read){hint}")
