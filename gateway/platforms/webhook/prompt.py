"""The turn a webhook event becomes (pure): the hook's template with ``{name}``, ``{event}``,
``{payload}`` (the whole body, pretty JSON when it is JSON, cut to ``MAX_PAYLOAD``) and dotted
fields of a JSON payload (``{pull_request.title}``); a field that is absent stays as written."""
from __future__ import annotations

import json
import re
from typing import Any

MAX_PAYLOAD = 20_000  # characters of payload in one turn
_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)\}")


def decode(body: bytes) -> Any:
    """JSON, or a form's ``payload=`` field holding JSON (GitHub's form mode), else the text."""
    text = body.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        pass
    from urllib.parse import parse_qs

    form = parse_qs(text)
    if "payload" in form:
        try:
            return json.loads(form["payload"][0])
        except ValueError:
            return form["payload"][0]
    return text


def _lookup(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            raise KeyError(dotted)
    return data


def _show(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=1, ensure_ascii=False)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… ({len(text) - limit} more characters)"


def render(template: str, name: str, event: str, payload: Any) -> str:
    fixed = {"name": name, "event": event or "unknown", "payload": _show(payload, MAX_PAYLOAD)}

    def one(m: re.Match[str]) -> str:
        key = m.group(1)
        if key in fixed:
            return fixed[key]
        try:
            return _show(_lookup(payload, key), 2_000)
        except KeyError:
            return m.group(0)

    return _FIELD.sub(one, template)
