"""Fold look-alike letters onto plain Latin before text is screened (``agent.injection``). Pure.

``Ignоre previous instructions`` with a Cyrillic ``о`` reads the same to a model and to a person,
but not to a regular expression. NFKC folds compatibility forms (fullwidth ``Ｉ``, ligatures,
``ℓ``); the small map below folds the Cyrillic and Greek letters that look like Latin ones. The
folded text is only matched against, never shown or stored.
"""
from __future__ import annotations

import unicodedata

# Cyrillic and Greek letters drawn like Latin ones (lower and upper case), plus dotless i.
_LOOKALIKES = {
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s", "һ": "h",
    "ԁ": "d", "ԛ": "q", "ԝ": "w", "ѵ": "v", "ӏ": "l", "ɡ": "g",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P",
    "С": "C", "Т": "T", "У": "Y", "Х": "X", "І": "I", "Ј": "J", "Ѕ": "S", "Һ": "H",
    "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W", "Ѵ": "V", "Ӏ": "I",
    # Greek
    "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
    "τ": "t", "υ": "u", "χ": "x", "γ": "y",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M",
    "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # Latin look-alikes NFKC keeps
    "ı": "i", "ȷ": "j",
}
_TABLE = str.maketrans(_LOOKALIKES)


def fold(text: str) -> str:
    """``text`` with compatibility forms and look-alike letters replaced by plain Latin ones."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", text).translate(_TABLE)
