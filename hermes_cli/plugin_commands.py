"""`hermes NAME` for the commands plugins register (``ctx.register_cli_command``): the built-in
`profile`, `auth` and `model` (``hermes_cli.cli_plugin``) and any enabled plugin's, from a pip
package or a ``HERMES_HOME/plugins/<name>/`` folder.

Reading them costs a start nothing more: the plugins are loaded while the parser is built anyway
(``--provider``'s help lists the providers they register).
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Iterable


def registered() -> list[Any]:
    """Every plugin's CLI command (the last registration of a name wins), plugins loaded."""
    from hermes_core.config import ensure_plugins
    from hermes_core.plugin_api import REGISTRY

    ensure_plugins()
    last: dict[str, Any] = {}
    for reg in REGISTRY.of("cli_command"):
        last[reg.name] = reg
    return list(last.values())


def _handler(reg: Any) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        status = reg.value(args)
        return status if isinstance(status, int) else 0
    return run


def _broken(reg: Any, exc: BaseException) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        raise ValueError(f"`hermes {reg.name}` of plugin {reg.plugin} could not set up its "
                         f"arguments ({type(exc).__name__}: {exc}); `hermes plugins list` names "
                         "the plugin")
    return run


def add_registered(sub: Any, known: Iterable[str]) -> None:
    """Add each registered command to the subparsers ``sub``; a name `hermes` has already is
    left to it (a plugin cannot take over `hermes sessions`)."""
    taken = set(known)
    for reg in registered():
        if reg.name in taken:
            continue
        p = sub.add_parser(reg.name, help=reg.options.get("help") or f"(plugin {reg.plugin})")
        try:
            setup = reg.options.get("setup")
            if setup is not None:
                setup(p)
        except Exception as exc:  # noqa: BLE001 - a plugin's bug: named when the command runs
            sys.stderr.write(f"hermes: warning: plugin {reg.plugin}: `hermes {reg.name}` could "
                             f"not set up its arguments: {exc}\n")
            p.set_defaults(func=_broken(reg, exc))
            continue
        p.set_defaults(func=_handler(reg))
