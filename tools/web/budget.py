"""The per-page token budget: a long page is shown as its head and tail, the whole text saved to
a file the agent's read_file can page through.

Where the file goes: inside the directory file tools are confined to (``<confine_to>/.hermes/
web/``: a gateway agent may read nothing else), otherwise ``HERMES_HOME/cache/web/`` (the
terminal's agent reads any path, and a user's project is not littered with a ``.hermes``
folder). The name is a hash of the URL, so extracting a page again replaces its file.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Optional

from hermes_core.tokens import estimate_text_tokens

HEAD_SHARE = 0.7  # of the budget; the tail gets the rest (conclusions, references)


def head_tail(text: str, max_tokens: int) -> Optional[tuple[str, str, int]]:
    """(head, tail, first line number of the omitted part) when ``text`` is over ``max_tokens``,
    else None. Cuts fall on line ends where there is one nearby. Pure."""
    if estimate_text_tokens(text) <= max_tokens:
        return None
    ratio = max_tokens / max(1, estimate_text_tokens(text))
    budget = max(200, int(len(text) * ratio))
    head_end = _line_end(text, int(budget * HEAD_SHARE))
    tail_start = _line_start(text, len(text) - (budget - head_end), head_end)
    omitted_line = text.count("\n", 0, head_end) + 2
    return text[:head_end], text[tail_start:], omitted_line


def _line_end(text: str, at: int) -> int:
    nl = text.rfind("\n", 0, at)
    return nl if nl > at * 0.8 else at


def _line_start(text: str, at: int, floor: int) -> int:
    at = max(at, floor)
    nl = text.find("\n", at)
    return nl + 1 if 0 <= nl < at + max(200, (len(text) - at) // 5) else at


def store_dir(ctx: Any) -> Path:
    confine = getattr(ctx, "confine_to", None)
    if confine is not None:
        return Path(confine) / ".hermes" / "web"
    from hermes_core.config import hermes_home

    return hermes_home() / "cache" / "web"


def save_full(ctx: Any, url: str, title: str, text: str) -> Path:
    """Write the whole extracted text; returns its path."""
    from hermes_core.files import atomic_write

    path = store_dir(ctx) / (hashlib.sha256(url.encode()).hexdigest()[:16] + ".md")
    header = f"# {title}\n" if title else ""
    atomic_write(path, f"{header}Source: {url}\n\n{text}\n".encode())
    return path


def fit(ctx: Any, url: str, title: str, text: str, max_tokens: int) -> str:
    """``text`` as shown in a tool result: whole, or head + a marker naming the saved file +
    tail."""
    cut = head_tail(text, max_tokens)
    if cut is None:
        return text
    head, tail, line = cut
    try:
        path = save_full(ctx, url, title, text)
        # the saved file starts with 2-3 header lines before the text
        offset = line + (3 if title else 2)
        where = (f"the whole page is in {path}: read_file(path={str(path)!r}, offset={offset}) "
                 "pages through it")
    except OSError as exc:
        where = f"the whole page could not be saved ({exc.strerror or exc})"
    omitted = len(text) - len(head) - len(tail)
    return f"{head}\n\n[... {omitted:,} characters omitted; {where} ...]\n\n{tail}"
