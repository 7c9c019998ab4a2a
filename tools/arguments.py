"""Tool arguments against their JSON schema, accepting the harmless near-misses models emit
(``"true"`` for a boolean, ``"3"`` for an integer, the JSON text of a list or object); the rest is
a ToolError the model can act on. Pure."""
from __future__ import annotations

import json
from typing import Any

from tools.context import ToolError


_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
    "null": "null",
}


def _coerce(value: Any, typ: str) -> tuple[bool, Any]:
    """Check `value` against a JSON-schema type; accept the harmless near-misses models emit."""
    if typ == "string":
        return isinstance(value, str), value
    if typ == "boolean":
        if isinstance(value, bool):
            return True, value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return True, value.lower() == "true"
        return False, value
    if typ == "integer":
        if isinstance(value, bool):
            return False, value
        if isinstance(value, int):
            return True, value
        if isinstance(value, float) and value.is_integer():
            return True, int(value)
        if isinstance(value, str):
            try:
                return True, int(value.strip())
            except ValueError:
                return False, value
        return False, value
    if typ == "number":
        if isinstance(value, bool):
            return False, value
        if isinstance(value, (int, float)):
            return True, value
        if isinstance(value, str):
            try:
                return True, float(value.strip())
            except ValueError:
                return False, value
        return False, value
    if typ in ("array", "object"):
        want = list if typ == "array" else dict
        if isinstance(value, str):  # models sometimes send a list or object as its JSON text
            try:
                parsed = json.loads(value)
            except ValueError:
                return False, value
            return isinstance(parsed, want), parsed
        return isinstance(value, want), value
    if typ == "null":
        return value is None, value
    return True, value  # unknown type keyword: don't second-guess the schema


def validate_args(name: str, schema: dict, args: dict) -> dict:
    """Check required parameters and basic types; returns args with light coercions applied."""
    props: dict = schema.get("properties") or {}
    missing = [p for p in schema.get("required") or () if p not in args or args[p] is None]
    if missing:
        raise ToolError(
            f"{name}: missing required parameter{'s' if len(missing) > 1 else ''} "
            + ", ".join(repr(m) for m in missing)
        )
    out = dict(args)
    for key, value in args.items():
        prop = props.get(key)
        if not isinstance(prop, dict) or "type" not in prop:
            continue
        if value is None and key not in (schema.get("required") or ()):
            out.pop(key)  # an explicit null for an optional parameter means "use the default"
            continue
        types = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
        for typ in types:
            ok, coerced = _coerce(value, typ)
            if ok:
                out[key] = coerced
                break
        else:
            want = " or ".join(_TYPE_NAMES.get(t, t) for t in types)
            raise ToolError(
                f"{name}: parameter {key!r} must be {want}, "
                f"got {type(value).__name__} {value!r:.80}"
            )
        enum = prop.get("enum")
        if enum is not None and out[key] not in enum:
            raise ToolError(f"{name}: parameter {key!r} must be one of {enum}, got {out[key]!r}")
    return out
