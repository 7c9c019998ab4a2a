"""Reading and changing config.yaml by dotted key, secrets kept out of it (``hermes config``,
the dashboard): which keys are secrets and where they live, masking for display, and a ``set``
that never writes a file that would not load.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

from hermes_core.config import ConfigError, config_path, env_path, parse_config, read_raw_config
from hermes_core.files import atomic_write
from hermes_core.home import write_env_var

# Dotted keys that hold secrets -> the environment variable the runtime reads them from.
SECRET_KEYS = {
    "model.api_key": "OPENAI_API_KEY",  # OPENROUTER_API_KEY when the provider is openrouter
    "auxiliary.compression.api_key": "HERMES_AUX_COMPRESSION_API_KEY",
    "delegation.api_key": "HERMES_DELEGATION_API_KEY",
    "gateway.telegram.token": "TELEGRAM_BOT_TOKEN",
    "gateway.telegram.bot_token": "TELEGRAM_BOT_TOKEN",
    "gateway.api_server.key": "API_SERVER_KEY",
    "gateway.api_server.api_key": "API_SERVER_KEY",
}
# For display only: names that look like they hold a secret are masked (counters like
# `threshold_tokens` are not secrets).
_LOOKS_SECRET = re.compile(r"(api[_-]?key|(^|[_-])key$|(^|[_-])token$|secret|password|passwd"
                           r"|authorization|cookie|credential)", re.I)
MISSING = object()


def is_secret(key: str) -> bool:
    """A dotted config key whose value belongs in .env, not config.yaml."""
    return key.lower() in SECRET_KEYS


def looks_secret(name: str) -> bool:
    return bool(_LOOKS_SECRET.search(name.rsplit(".", 1)[-1]))


def mask(value: Optional[str]) -> str:
    """Enough to recognise a key, never enough to use it."""
    if not value:
        return "(not set)"
    value = str(value)
    return f"{value[:3]}…{value[-4:]}" if len(value) >= 16 else "****"


def secret_env_var(key: str, raw: Optional[dict] = None) -> str:
    """The environment variable that holds the secret for a dotted config key."""
    key = key.lower()
    if key == "model.api_key":
        model = (raw or {}).get("model")
        provider = model.get("provider") if isinstance(model, dict) else None
        return "OPENROUTER_API_KEY" if provider == "openrouter" else "OPENAI_API_KEY"
    return SECRET_KEYS[key]


def parse_value(text: str) -> Any:
    """'3' -> 3, '0.5' -> 0.5, 'true'/'no' -> bool, 'null' -> None, anything else stays a string."""
    low = text.strip().lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("null", "none", "~"):
        return None
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def get_dotted(data: Any, key: str) -> Any:
    for part in key.split("."):
        if isinstance(data, dict) and part in data:
            data = data[part]
        else:
            return MISSING
    return data


def set_dotted(data: dict, key: str, value: Any) -> None:
    parts = key.split(".")
    cur = data
    for part in parts[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            cur[part] = nxt
        cur = nxt
    cur[parts[-1]] = value


def del_dotted(data: dict, key: str) -> None:
    parts = key.split(".")
    cur: Any = data
    for part in parts[:-1]:
        cur = cur.get(part) if isinstance(cur, dict) else None
    if isinstance(cur, dict):
        cur.pop(parts[-1], None)


def write_config(data: dict, path: Optional[Path] = None) -> Path:
    """config.yaml replaced atomically; it and its folder are private from the first byte (the
    file names endpoints and, in older installs, keys)."""
    import yaml

    from hermes_core.home import ensure_private_dir

    p = path or config_path()
    ensure_private_dir(p.parent)  # HERMES_HOME private from the first byte (setup may create it)
    return atomic_write(p, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def read_env_file() -> dict[str, str]:
    p = env_path()
    if not p.is_file():
        return {}
    from dotenv import dotenv_values

    return {k: v for k, v in dotenv_values(p).items() if v is not None}


def masked_tree(data: Any, prefix: str = "") -> Any:
    """Secrets masked: values under secret-looking keys, and URL passwords anywhere (store.url)."""
    from hermes_core.redact import redact_shapes

    if isinstance(data, dict):
        return {k: masked_tree(v, f"{prefix}{k}.") for k, v in data.items()}
    if isinstance(data, list):
        return [masked_tree(v, prefix) for v in data]
    if prefix and (is_secret(prefix[:-1]) or looks_secret(prefix[:-1])) and isinstance(data, str):
        return mask(data)
    return redact_shapes(data) if isinstance(data, str) else data



def set_key(key: str, text: str, force: bool = False) -> str:
    """Set a dotted key from its text form: a secret goes to ``.env`` (and leaves config.yaml),
    anything else into config.yaml after checking the result still loads (types, ranges, the
    gateway's settings included). An unknown key (a typo) is refused unless ``force``. Returns
    the line saying where it went; raises ``ConfigError`` (nothing written) on a bad key or
    value."""
    from hermes_core.config_keys import key_problem

    key = key.strip().strip(".")
    if not key or any(not part for part in key.split(".")):
        raise ConfigError(f"`{key}` is not a dotted key like model.default")
    problem = None if force else key_problem(key)
    if problem is not None:
        hint = f" (did you mean `{problem.suggestion}`?)" if problem.suggestion else ""
        raise ConfigError(f"unknown config key `{key}`{hint}; nothing was written (`hermes config "
                          "set --force KEY VALUE` writes it anyway)")
    raw = read_raw_config()
    if is_secret(key):
        var = secret_env_var(key, raw)
        p = write_env_var(var, text)
        if get_dotted(raw, key) is not MISSING:  # move a plain-text secret out of config.yaml
            del_dotted(raw, key)
            write_config(raw)
        return f"{key} saved as {var} in {p} (mode 600): {mask(text)}"
    value = parse_value(text)
    set_dotted(raw, key, value)
    parse_config(raw, f"{config_path()} after setting {key}")  # never write a file that won't load
    p = write_config(raw)
    return f"{key} = {value!r} written to {p}"
