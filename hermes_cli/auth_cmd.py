"""`hermes auth list|add|remove`: the keys of each provider's credential pool, always masked.

A pool is every key a provider has: its variable (``OPENAI_API_KEY``), ``<VAR>S=k1,k2``, the
config's ``model.api_keys`` (main provider) and the keys stored in ``HERMES_HOME/auth.json`` by
``hermes auth add`` (``hermes_core.auth_store``). Only stored keys can be removed here; the others
live where they were set.
"""
from __future__ import annotations

import argparse
import getpass
import os
import sys
from typing import Any, Optional

from hermes_core import auth_store


def setup(p: argparse.ArgumentParser) -> None:
    """The arguments of `hermes auth` (registered by hermes_cli.cli_plugin)."""
    ps = p.add_subparsers(dest="auth_action", metavar="ACTION")
    ls = ps.add_parser("list", help="every provider's keys (masked) and where each comes from")
    ls.add_argument("provider", nargs="?", metavar="PROVIDER")
    a = ps.add_parser("add", help="store one more key for PROVIDER (asked for when not given)")
    a.add_argument("provider", metavar="PROVIDER")
    a.add_argument("--key", metavar="KEY", help="the key (else read from stdin or a prompt)")
    a.add_argument("--label", metavar="LABEL", help="a name for it in the list")
    r = ps.add_parser("remove", help="drop a stored key by its number or label")
    r.add_argument("provider", metavar="PROVIDER")
    r.add_argument("ref", metavar="N|LABEL")


def _provider(name: str) -> Any:
    from hermes_core import provider_table as catalog
    from hermes_core.config import ConfigError

    try:
        info = catalog.lookup(name)
    except catalog.UnknownProvider as exc:
        raise ConfigError(str(exc)) from None
    if info is None or not info.key_vars:
        raise ConfigError(f"provider {name!r} takes no API key")
    return info


def sources(info: Any, env: Any, cfg: Any) -> list[tuple[str, str]]:
    """(where, key) of every key of ``info``'s pool, in the order requests use them."""
    from hermes_core.provider_config import listify

    out = [(v, env[v]) for v in info.key_vars if env.get(v)]
    out += [(info.pool_var, k) for k in listify(env.get(info.pool_var) or None)]
    if cfg.model.provider == info.name:
        out += [("model.api_keys", k) for k in cfg.model.api_keys]
    stored = auth_store.entries(info.name)
    out += [(f"auth.json #{i} {r.get('label', '')}".rstrip(), str(r["api_key"]))
            for i, r in enumerate(stored, 1)]
    seen: set[str] = set()
    return [(w, k) for w, k in out if not (k in seen or seen.add(k))]


def cmd_list(name: Optional[str]) -> int:
    from hermes_core import provider_table as catalog
    from hermes_core.config import load_config
    from hermes_core.config_edit import mask

    cfg = load_config()
    infos = [_provider(name)] if name else [i for i in catalog.PROVIDERS.values() if i.key_vars]
    for info in infos:
        rows = sources(info, os.environ, cfg)
        sys.stdout.write(f"{info.name}: {len(rows)} key{'s' if len(rows) != 1 else ''}\n")
        for where, key in rows:
            sys.stdout.write(f"  {mask(key):<12} {where}\n")
    return 0


def _read_key(given: Optional[str]) -> str:
    if given:
        return given
    if sys.stdin.isatty():
        return getpass.getpass("API key (not shown): ")
    return sys.stdin.readline().strip()


def run(args: argparse.Namespace) -> int:
    from hermes_core.config_edit import mask

    action = args.auth_action
    try:
        if action in (None, "list"):
            return cmd_list(getattr(args, "provider", None))
        info = _provider(args.provider)
        if action == "add":
            row = auth_store.add_key(info.name, _read_key(args.key), args.label)
            sys.stdout.write(f"Stored {mask(row['api_key'])} for {info.name} as {row['label']} "
                             f"in {auth_store.auth_path()} (mode 600).\n")
            return 0
        row = auth_store.remove_key(info.name, args.ref)
        sys.stdout.write(f"Removed {mask(row['api_key'])} ({row.get('label')}) of {info.name}.\n")
        return 0
    except auth_store.AuthStoreError as exc:
        sys.stderr.write(f"hermes: error: {exc}\n")
        return 2
