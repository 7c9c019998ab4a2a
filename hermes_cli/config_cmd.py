"""`hermes config show|get|set|path`: dotted keys into config.yaml, secrets into .env.

Secrets (keys naming an api key, token, secret or password) never land in config.yaml: `set`
writes them to HERMES_HOME/.env (mode 600) under the environment variable the runtime reads, and
`show`/`get` print them masked.
"""
from __future__ import annotations

import os
import sys
from typing import Any

from hermes_core.config import ConfigError, config_path, env_path, parse_config, read_raw_config
from hermes_core.config_edit import (MISSING, SECRET_KEYS, del_dotted, get_dotted,  # noqa: F401
                                     is_secret, looks_secret, mask, masked_tree, parse_value,
                                     read_env_file, secret_env_var, set_dotted, set_key,
                                     write_config)
from hermes_core.home import ensure_home, write_env_var  # noqa: F401 - write_env_var is re-exported

def cmd_show(out=sys.stdout) -> int:
    import yaml

    raw = read_raw_config()
    parse_config(raw, str(config_path()))  # junk shows as one ConfigError line
    out.write(f"# {config_path()}\n")
    out.write(yaml.safe_dump(masked_tree(raw), sort_keys=False, allow_unicode=True) if raw
              else "# (no config.yaml yet: built-in defaults; run `hermes setup`)\n")
    env = read_env_file()
    if env:
        out.write(f"# secrets in {env_path()}\n")
        for k, v in env.items():
            out.write(f"{k}={mask(v) if looks_secret(k) else masked_tree(v)}\n")
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
        if not val and in_yaml is not MISSING:
            val = in_yaml
        out.write((mask(val) if val else "") + "\n")
        err.write(f"(secret, from {var})\n" if val else
                  f"(not set; `hermes config set {key} VALUE` stores it in .env)\n")
        return 0
    value = get_dotted(parse_config(raw, str(config_path())).model_dump(), key)
    if value is MISSING:
        from hermes_cli.agent_factory import CommandError

        raise CommandError(f"no config key `{key}`; see `hermes config show` for what is set")
    if isinstance(value, (dict, list)):
        out.write(yaml.safe_dump(masked_tree(value, key + "."), sort_keys=False))
    else:
        shown = "" if value is None else str(value)
        shown = shown.lower() if isinstance(value, bool) else shown
        out.write(masked_tree(shown) + "\n")
    return 0


def check_gateway_values(raw: dict) -> None:
    """The gateway's own parsers of its whole-number settings, run on a `config set` so a value
    that would stop `hermes gateway run` is refused before it is written."""
    from gateway.capacity import turn_settings
    from gateway.lease import lease_wait

    gw = raw.get("gateway") if isinstance(raw.get("gateway"), dict) else {}
    turn_settings(gw)
    lease_wait(gw)


def cmd_set(key: str, text: str, out=sys.stdout, force: bool = False) -> int:
    """Set one dotted key; an unknown key (a typo) is refused unless ``force``, and the value must
    load (type, range, time zone) before anything is written."""
    check = check_gateway_values if key.strip().startswith("gateway.") else None
    out.write(set_key(key, text, force=force, check=check) + "\n")
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
