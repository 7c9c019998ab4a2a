"""JSON for bodies on the wire: orjson when it is installed, else the standard library.

Why: a provider request carries the whole history and every tool schema (~12 KB for a default
agent); ``json.dumps`` spent ~125 us on one, orjson ~11 us, on every provider call of every turn.
What orjson cannot encode (an int past 64 bits, an unknown type) goes through ``json`` instead,
so the output is the same JSON either way (non-ASCII text is sent as UTF-8, not escaped).
"""
from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; a bare install still works
    orjson = None  # type: ignore[assignment]


def dumps(obj: Any) -> bytes:
    """``obj`` as UTF-8 JSON bytes."""
    if orjson is not None:
        try:
            return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:
            pass
    return json.dumps(obj, ensure_ascii=False).encode()


def dumps_text(obj: Any) -> str:
    """``dumps`` as text (what ``aiohttp.web.json_response(dumps=...)`` takes)."""
    return dumps(obj).decode()


def loads(data: "str | bytes") -> Any:
    """Decoded JSON of ``data`` (a streamed chunk is parsed per SSE record: orjson is faster).
    What orjson refuses but ``json`` reads (``NaN``, a lone surrogate escape) goes through ``json``,
    so the same bodies decode; bad JSON raises ``json.JSONDecodeError`` either way."""
    if orjson is not None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data)
