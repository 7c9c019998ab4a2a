"""The search syntax of SPEC §11 (FTS5's) translated to PostgreSQL ``to_tsquery`` text. Pure.

Words are AND-ed, ``OR`` between terms, ``NOT term`` excludes, ``"a phrase"`` matches words in
sequence, ``prefix*`` matches a word's beginning. Precedence as in FTS5: NOT, then AND, then OR.
Parentheses and column filters do not map and are dropped. Every term is single-quoted in the
output, so no input can make ``to_tsquery`` fail; each is stemmed by the text-search
configuration exactly like the indexed text.
"""
from __future__ import annotations

import re

_TOKEN = re.compile(r'"([^"]*)"?|([^\s"]+)')
OPERATORS = ("AND", "OR", "NOT")


def _quote(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def _term(text: str, phrase: bool) -> str:
    """One operand: a quoted lexeme (a phrase when it holds several words), ``:*`` for prefixes."""
    if phrase:
        words = text.split()
        return _quote(" ".join(words)) if words else ""
    text = text.strip("()")
    prefix = text.endswith("*")
    text = text.rstrip("*")
    if not any(ch.isalnum() for ch in text):
        return ""
    return _quote(text) + (":*" if prefix else "")


def to_tsquery_text(query: str) -> str:
    """``to_tsquery`` input for an FTS5-style ``query``; "" when nothing searchable is left."""
    clauses: list[list[str]] = [[]]
    negate = False
    for m in _TOKEN.finditer(query or ""):
        phrase, word = m.group(1), m.group(2)
        if word in OPERATORS:
            if word == "OR" and clauses[-1]:
                clauses.append([])
            negate = word == "NOT"
            continue
        operand = _term(phrase if phrase is not None else word, phrase is not None)
        if operand:
            clauses[-1].append(("!" if negate else "") + operand)
        negate = False
    parts = [" & ".join(c) for c in clauses if c]
    if len(parts) == 1:
        return parts[0]
    return " | ".join(f"({p})" for p in parts)
