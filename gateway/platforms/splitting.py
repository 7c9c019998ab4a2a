"""Long answers as several messages, each within a platform's limit (pure).

Cuts fall at the last paragraph break that fits, else the last line break, else the last space,
else hard. A cut inside a fenced code block closes the fence and reopens it (same info string) in
the next piece, so every piece renders as code on its own. Lengths are UTF-16 code units by
default: Telegram and Discord count those, and it is never less than the code points others count.
"""
from __future__ import annotations

from typing import Callable

TELEGRAM_LIMIT = 4096
Measure = Callable[[str], int]


def utf16_len(text: str) -> int:
    """Telegram measures message length in UTF-16 code units, not code points."""
    return len(text.encode("utf-16-le")) // 2


def _fitting_prefix(text: str, limit: int, length: Measure) -> int:
    cut = min(len(text), limit)
    while cut > 1 and length(text[:cut]) > limit:
        cut -= max(1, (length(text[:cut]) - limit + 1) // 2)
    return max(cut, 1)


def _open_fence(text: str) -> str:
    """The info line of a code fence left open at the end of ``text`` ("" when none is)."""
    fence = ""
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = "" if fence else (stripped or "```")
    return fence


def _plain_split(text: str, limit: int, length: Measure) -> tuple[str, str]:
    cut = _fitting_prefix(text, limit, length)
    window = text[:cut]
    for sep in ("\n\n", "\n", " "):
        at = window.rfind(sep)
        if at > 0:
            return text[:at], text[at + len(sep):]
    return window, text[cut:]


def split_message(text: str, limit: int = TELEGRAM_LIMIT, length: Measure = utf16_len) -> list[str]:
    """Pieces of at most ``limit`` units; never an empty list."""
    chunks: list[str] = []
    rest = text
    while length(rest) > limit:
        piece, after = _plain_split(rest, limit, length)
        fence = _open_fence(piece)
        if fence:  # keep both halves renderable: close here, reopen with the same info string
            piece, after = _plain_split(rest, max(limit - 4, 1), length)
            fence = _open_fence(piece)
            if fence:
                piece, after = piece.rstrip() + "\n```", fence + "\n" + after
        rest = after
        if piece.strip():
            chunks.append(piece.rstrip())
        rest = rest.lstrip("\n") if not fence else rest
    if rest.strip() or not chunks:
        chunks.append(rest)
    return chunks
