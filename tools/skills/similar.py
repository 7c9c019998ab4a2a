"""Close names and near-duplicate skills (pure): "did you mean" for unknown names, and the check
that stops the agent from creating a second skill for what an existing one already covers."""
from __future__ import annotations

import difflib
import re
from typing import Iterable, Optional

NAME_CUTOFF = 0.85
DESCRIPTION_CUTOFF = 0.85


def _squash(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_FILLER = frozenset("a an the to of and or for with in on at by from into this that it its is "
                    "are be use when how your you".split())


def _words(text: str) -> list[str]:
    """The content words of a description (filler words would make any two look alike)."""
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _FILLER]


def close_names(name: str, names: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` known names closest to ``name`` (substring matches count), best first."""
    names = list(names)
    low = name.lower()
    out = difflib.get_close_matches(low, names, n=n, cutoff=0.6)
    for cand in names:
        if len(out) >= n:
            break
        if cand not in out and low and (low in cand or cand in low):
            out.append(cand)
    return out[:n]


def near_duplicate(name: str, description: str,
                   existing: Iterable[tuple[str, str]]) -> Optional[tuple[str, str]]:
    """The first (name, why) of an existing skill that ``name``/``description`` nearly repeats."""
    squashed, words = _squash(name), _words(description)
    for other, other_desc in existing:
        if (_squash(other) == squashed
                or difflib.SequenceMatcher(None, name, other).ratio() >= NAME_CUTOFF):
            return other, "its name is nearly the same"
        other_words = _words(other_desc)
        if words and other_words:
            ratio = difflib.SequenceMatcher(None, words, other_words).ratio()
            overlap = len(set(words) & set(other_words)) / len(set(words) | set(other_words))
            if ratio >= DESCRIPTION_CUTOFF or overlap >= DESCRIPTION_CUTOFF:
                return other, "its description says nearly the same"
    return None
