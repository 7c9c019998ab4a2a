"""`hermes config show|get|set|path`: dotted keys into config.yaml, secrets into .env.

Secrets (keys naming an api key, token, secret or password) never land in config.yaml: `set`
writes them to HERMES_HOME/.env (mode 600) under the environment variable the runtime reads, and
`show`/`get` print them masked.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any, Optional

from hermes_core.files import atomic_write
from hermes_core.config import (ConfigError, config_path, env_path,
                          parse_config, read_raw_config)
from hermes_core.home import ensure_home, write_env_var  # noqa: F401 - write_env_var is re-exported

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
_MISSING = object()


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
            return _MISSING
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


def _masked_tree(data: Any, prefix: str = "") -> Any:
    """Secrets masked: values under secret-looking keys, and URL passwords anywhere (store.url)."""
    from hermes_core.redact import redact_shapes

    if isinstance(data, dict):
        return {k: _masked_tree(v, f"{prefix}{k}.") for k, v in data.items()}
    if isinstance(data, list):
        return [_masked_tree(v, prefix) for v in data]
    if prefix and (is_secret(prefix[:-1]) or looks_secret(prefix[:-1])) and isinstance(data, str):
        return mask(data)
    return redact_shapes(data) if isinstance(data, str) else data


def cmd_show(out=sys.stdout) -> int:
    import yaml

    raw = read_raw_config()
    parse_config(raw, str(config_path()))  # junk shows as one ConfigError line
    out.write(f"# {config_path()}\n")
    out.write(yaml.safe_dump(_masked_tree(raw), sort_keys=False, allow_unicode=True) if raw else "# (no config.yaml yet: built-in defaults; run `hermes setup`)\n")
    env = read_env_file()
    if env:
        out.write(f"# secrets in {env_path()}\n")
        for k, v in env.items():
            out.write(f"{k}={mask(v) if looks_secret(k) else _masked_tree(v)}\n")
    return 0


def cmd_get(key: str, out=sys.stdout, err=sys.stderr) -> int:
    """The value alone on stdout, for scripts: scalars as text (`true`/`false`, an empty line when
    unset), lists and mappings as YAML; a secret masked (where it comes from goes to stderr)."""
    import yaml

    raw = read_raw_config()
    if is_secret(key):
        var = secret_env_var(key, raw)
        val = os.environ.get(var) or read_env_file().get(var)
        in_yaml = get_dotted(raw, key)
        if not val and in_yaml is not _MISSING:
            val = in_yaml
        out.write((mask(val) if val else "") + "\n")
        err.write(f"(secret, from {var})\n" if val else
                  f"(not set; `hermes config set {key} VALUE` stores it in .env)\n")
        return 0
    value = get_dotted(parse_config(raw, str(config_path())).model_dump(), key)
    if value is _MISSING:
        from hermes_cli.agent_factory import CommandError

        raise CommandError(f"no config key `{key}`; see `hermes config show` for what is set")
    if isinstance(value, (dict, list)):
        out.write(yaml.safe_dump(_masked_tree(value, key + "."), sort_keys=False))
    else:
        shown = "" if value is None else str(value)
        shown = shown.lower() if isinstance(value, bool) else shown
        out.write(_masked_tree(shown) + "\n")
    return 0


def check_gateway_values(gateway: Any) -> None:
    """The gateway's own parsers of its whole-number settings, run on a `config set` so a value
    that would stop `hermes gateway run` is refused before it is written."""
    from gateway.capacity import turn_settings
    from gateway.lease import lease_wait

    gw = gateway if isinstance(gateway, dict) else {}
    turn_settings(gw)
    lease_wait(gw)


def cmd_set(key: str, text: str, out=sys.stdout, force: bool = False) -> int:
    """Set one dotted key; an unknown key (a typo) is refused unless ``force``, and the value must
    load (type, range, time zone) before anything is written."""
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
        if get_dotted(raw, key) is not _MISSING:  # move a plain-text secret out of config.yaml
            del_dotted(raw, key)
            write_config(raw)
        out.write(f"{key} saved as {var} in {p} (mode 600): {mask(text)}\n")
        return 0
    value = parse_value(text)
    set_dotted(raw, key, value)
    parse_config(raw, f"{config_path()} after setting {key}")  # never write a file that won't load
    if key.startswith("gateway."):
        check_gateway_values(raw.get("gateway"))
    p = write_config(raw)
    out.write(f"{key} = {value!r} written to {p}\n")
    return 0


def cmd_path(out=sys.stdout) -> int:
    out.write(f"{config_path()}\n")
    return 0


def cmd_show_prompt(args: Any, out=sys.stdout) -> int:
    """The fixed prompt a new session here would send, by part (SPEC §9); nothing is stored."""
    from agent.prompt_builder import breakdown_lines
    from hermes_cli.agent_factory import build_agent

    cfg = parse_config(read_raw_config(), str(config_path()))
    agent = build_agent(args, cfg)
    rows = [row for row in agent.prompt_breakdown() if row[1]]
    window = getattr(agent.context_compressor, "context_length", 0)
    out.write(f"Fixed prompt of a new session in {agent.cwd} (model {agent.model}, "
              f"{window:,}-token window), tokens = characters/4:\n")
    for line in breakdown_lines(rows, target=4000):
        out.write(line + "\n")
    return 0


def run(args: Any) -> int:
    """Dispatch `hermes config <action>` from parsed arguments."""
    action = getattr(args, "config_action", None) or "show"
    ensure_home()
    if action == "show" and getattr(args, "prompt", False):
        return cmd_show_prompt(args)
    if action == "show":
        return cmd_show()
    if action == "get":
        return cmd_get(args.key)
    if action == "set":
        return cmd_set(args.key, args.value, force=bool(getattr(args, "force", False)))
    if action == "path":
        return cmd_path()
    raise ConfigError(f"unknown config action {action!r}")
