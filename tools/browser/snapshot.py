"""The page as the model sees it: Playwright's accessibility snapshot (``aria_snapshot(mode=
"ai")``: roles, names, values, and a ref per element) made compact and bounded. Pure.

Refs are written ``@e5`` (``@f1e2`` inside a later document or a frame); browser_click and
browser_type take ``@e5`` (or ``e5``), which becomes Playwright's ``aria-ref=e5`` locator. Past
the token budget the tree is cut at a line and the result says how many lines were left out.
"""
from __future__ import annotations

import re
from typing import Optional

from hermes_core.tokens import estimate_text_tokens

_REF = re.compile(r" \[ref=((?:f\d+)?e\d+)\]")
_NOISE = re.compile(r" \[cursor=pointer\]")
_REF_ARG = re.compile(r"^@?((?:f\d+)?e\d+)$")


def compact(tree: str) -> str:
    """``[ref=e5]`` -> ``@e5``, pointer-cursor marks dropped."""
    return _NOISE.sub("", _REF.sub(r" @\1", tree))


def bounded(tree: str, max_tokens: int) -> str:
    """The tree within ``max_tokens``, cut at a line, with a note when lines were left out."""
    if estimate_text_tokens(tree) <= max_tokens:
        return tree
    kept, used = [], 0
    lines = tree.splitlines()
    for line in lines:
        cost = estimate_text_tokens(line) + 1
        if used + cost > max_tokens:
            break
        kept.append(line)
        used += cost
    left = len(lines) - len(kept)
    return "\n".join(kept) + (f"\n[... {left} more lines of the page left out (browser.snapshot_"
                              "tokens); act on what is shown, or scroll and snapshot again]")


def ref_selector(ref: str) -> Optional[str]:
    """``@e5``/``e5`` -> ``aria-ref=e5`` (None when it is not a ref)."""
    m = _REF_ARG.match(ref.strip())
    return f"aria-ref={m.group(1)}" if m else None


def render(url: str, title: str, tree: str, max_tokens: int) -> str:
    return f"url: {url}\ntitle: {title}\n{bounded(compact(tree), max_tokens)}"
