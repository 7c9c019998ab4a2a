"""`hermes config show|get|set|path`: dotted keys into config.yaml, secrets into .env.

Secrets (keys naming an api key, token, secret or password) never land in config.yaml: `set`
writes them to HERMES_HOME/.env (mode 600) under the environment variable the runtime reads, and
`show`/`get` print them masked.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable

from hermes_core.config import config_path, env_path, parse_config, read_raw_config
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


def cmd_set(key: str, text: str, out=sys.stdout, force: bool = False) -> int:
    """Set one dotted key; an unknown key (a typo) is refused unless ``force``, and the value must
    load (type, range, time zone) before anything is written."""
    out.write(set_key(key, text, force=force) + "\n")
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


def _home_first(fn: Callable[..., int]) -> Callable[[Any], int]:
    """A `hermes config` action as an argparse handler: HERMES_HOME exists first."""
    def handler(args: Any) -> int:
        ensure_home()
        return fn(args)
    return handler


def _show(args: Any) -> int:
    return cmd_show_prompt(args) if getattr(args, "prompt", False) else cmd_show()


def add_parser(sub: Any) -> None:
    pg = sub.add_parser("config", help="show, get or set configuration")
    pg.set_defaults(func=_home_first(_show))  # bare `hermes config` shows
    cs = pg.add_subparsers(dest="config_action", metavar="ACTION")
    sh = cs.add_parser("show", help="config.yaml with secrets masked")
    sh.add_argument("--prompt", action="store_true",
                    help="instead: the fixed prompt's tokens by part "
                         "(system prompt + tool schemas)")
    sh.set_defaults(func=_home_first(_show))
    g = cs.add_parser("get", help="one value by dotted key, e.g. model.default")
    g.add_argument("key", metavar="KEY")
    g.set_defaults(func=_home_first(lambda args: cmd_get(args.key)))
    s = cs.add_parser("set", help="set a dotted key (secrets go to .env, mode 600)")
    s.add_argument("key", metavar="KEY")
    s.add_argument("value", metavar="VALUE")
    s.add_argument("--force", action="store_true", help="write a key hermes does not know")
    s.set_defaults(func=_home_first(lambda args: cmd_set(args.key, args.value, force=args.force)))
    pp = cs.add_parser("path", help="where config.yaml lives")
    pp.set_defaults(func=_home_first(lambda args: cmd_path()))
