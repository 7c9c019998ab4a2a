"""``hermes plugins list|enable|disable``: what is installed, what loaded, what failed and why.

``enable``/``disable`` edit ``plugins.enabled``/``plugins.disabled`` in config.yaml (Hermes' keys);
the change applies to the next agent process (a running gateway keeps what it loaded).
"""
from __future__ import annotations

import json
import sys
from typing import Any

from hermes_core.config import load_config, load_plugins, read_raw_config


def add_parser(sub: Any) -> None:
    p = sub.add_parser("plugins", help="list, enable or disable plugins (tools, hooks, platforms)")
    acts = p.add_subparsers(dest="plugins_action", metavar="ACTION")
    ls = acts.add_parser("list", help="every plugin found, with its source and status")
    ls.add_argument("--json", action="store_true", help="a JSON array of objects")
    ls.set_defaults(func=lambda args: cmd_list(args.json))
    for action, what in (("enable", "load it from the next start"), ("disable", "stop loading it")):
        a = acts.add_parser(action, help=what)
        a.add_argument("name", metavar="NAME")
        a.set_defaults(func=lambda args, on=(action == "enable"): cmd_toggle(args.name, on=on))
    p.set_defaults(func=lambda args: cmd_list(False))  # bare `hermes plugins` lists


def _status(info: Any) -> str:
    if info.error:
        return f"failed: {info.error}"
    if info.loaded:
        return "loaded"
    if not info.enabled:
        return ("disabled" if info.source == "builtin"
                else f"off (`hermes plugins enable {info.name}`)")
    return "enabled"


def cmd_list(json_out: bool) -> int:
    infos = load_plugins(load_config())
    if json_out:
        rows = [{"name": i.name, "source": i.source, "version": i.version, "enabled": i.enabled,
                 "loaded": i.loaded, "error": i.error, "where": i.where,
                 "description": i.description} for i in infos]
        print(json.dumps(rows, indent=2))
        return 0
    if not infos:
        print("No plugins found.")
        return 0
    width = max(len(i.name) for i in infos)
    for i in infos:
        version = f" {i.version}" if i.version else ""
        print(f"{i.name:<{width}}  {i.source:<7}  {_status(i)}{version}")
    return 0


def cmd_toggle(name: str, on: bool) -> int:
    from hermes_cli.config_cmd import write_config

    known = {i.name for i in load_plugins(load_config())}
    if name not in known:
        raise ValueError(f"no plugin named {name!r} is installed (found: "
                         f"{', '.join(sorted(known)) or 'none'}); see `hermes plugins list`")
    raw = read_raw_config()
    section = raw.get("plugins") if isinstance(raw.get("plugins"), dict) else {}
    enabled = [n for n in section.get("enabled") or [] if n != name]
    disabled = [n for n in section.get("disabled") or [] if n != name]
    (enabled if on else disabled).append(name)
    section.update(enabled=enabled, disabled=disabled)
    raw["plugins"] = section
    path = write_config(raw)
    word = "Enabled" if on else "Disabled"
    sys.stdout.write(f"{word} plugin {name} in {path}; it applies from the next start.\n")
    return 0
