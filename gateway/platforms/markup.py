"""The model's Markdown in each platform's own markup (pure).

- Matrix: ``formatted_body`` HTML (``org.matrix.custom.html``) from markdown-it-py's CommonMark
  renderer with raw HTML off, so a model cannot inject markup the client would render.
- Slack: mrkdwn (``*bold*``, ``_italic_``, ``~strike~``, ``<url|text>``, headings as bold lines,
  ``&``, ``<`` and ``>`` escaped), code spans and fences left as they are.
- Discord and Telegram (plain text) take Markdown as it is.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_FENCE = re.compile(r"(```.*?(?:```|\Z)|`[^`\n]+`)", re.S)
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+|mailto:[^)\s]+)\)")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_ITALIC = re.compile(r"(?<![\*\w])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\*\w])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
_BULLET = re.compile(r"^(\s*)[*+-]\s+", re.M)


@lru_cache(maxsize=1)
def _renderer() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": True}) \
        .enable(["table", "strikethrough"])


def markdown_html(text: str) -> str:
    """HTML for a Matrix ``formatted_body``; raw HTML in ``text`` comes out escaped."""
    return str(_renderer().render(text)).strip()


def looks_formatted(text: str) -> bool:
    """Worth an HTML body at all (plain sentences are sent as plain text only)."""
    return bool(re.search(r"[*_`#\[\]~>|]|^\s*[-+] |^\s*\d+\. ", text, re.M))


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _slack_prose(text: str) -> str:
    links: list[str] = []

    def keep_link(m: re.Match[str]) -> str:
        links.append(f"<{m.group(2)}|{_slack_escape(m.group(1))}>")
        return f"\x00{len(links) - 1}\x00"

    text = _LINK.sub(keep_link, text)
    text = _slack_escape(text)
    text = _HEADING.sub(lambda m: f"\x01{m.group(1)}\x01", text)
    text = _BULLET.sub(lambda m: f"{m.group(1)}• ", text)
    text = _BOLD.sub(lambda m: f"\x01{m.group(1) or m.group(2)}\x01", text)
    text = _ITALIC.sub(lambda m: f"_{m.group(1)}_", text)
    text = _STRIKE.sub(lambda m: f"~{m.group(1)}~", text)
    text = text.replace("\x01", "*")
    return re.sub("\x00(\\d+)\x00", lambda m: links[int(m.group(1))], text)


def slack_mrkdwn(text: str) -> str:
    """Slack's mrkdwn for Markdown ``text``; code stays verbatim (Slack shows it as code)."""
    out, last = [], 0
    for m in _FENCE.finditer(text):
        out.append(_slack_prose(text[last:m.start()]))
        code = m.group(0)
        if code.startswith("```"):  # Slack ignores the info string: drop it, keep the code
            code = re.sub(r"^```[^\n]*\n", "```\n", code)
        out.append(code)
        last = m.end()
    out.append(_slack_prose(text[last:]))
    return "".join(out)
