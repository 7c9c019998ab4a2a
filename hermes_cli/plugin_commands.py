"""`hermes NAME` for the commands plugins register (``ctx.register_cli_command``): the built-in
`profile`, `auth` and `model` (``hermes_cli.cli_plugin``) and any enabled plugin's, from a pip
package or a ``HERMES_HOME/plugins/<name>/`` folder.

Loading every plugin costs a start about 0.15 s, so the parser asks for them only when the
command line needs them: its command word is none of the commands `hermes` knows itself, or it
asks for the top-level ``--help`` (which lists every command). ``hermes -z``, the chat and the
other commands start as before.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Iterable, Optional

HELP_FLAGS = ("-h", "--help")


class _Stop(Exception):
    pass


class _Quiet(argparse.ArgumentParser):
    """A parser that raises instead of printing and exiting: the real one reports errors."""

    def error(self, message: str) -> Any:
        raise _Stop(message)


def command_word(argv: list[str], add_flags: Callable[[argparse.ArgumentParser], None]
                 ) -> tuple[Optional[str], bool]:
    """(the command word, or None; whether it could be told): the top-level flags (``add_flags``)
    are skipped with their values, so ``hermes -z hello`` has no command word."""
    p = _Quiet(add_help=False)
    add_flags(p)
    p.add_argument("command", nargs="?")
    p.add_argument("rest", nargs=argparse.REMAINDER)
    try:
        ns, _ = p.parse_known_args(argv)
    except _Stop:
        return None, False
    return ns.command, True


def wants_plugins(argv: list[str], known: Iterable[str],
                  add_flags: Callable[[argparse.ArgumentParser], None]) -> bool:
    """Whether the parser needs the plugins' commands for this command line."""
    word, told = command_word(argv, add_flags)
    if not told:
        return True  # a flag's value is junk: the full parser names the problem
    if word is None:
        head = argv[:argv.index("--")] if "--" in argv else argv
        return any(a in HELP_FLAGS for a in head)
    return word not in set(known)


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
