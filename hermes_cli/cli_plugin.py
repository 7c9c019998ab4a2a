"""The built-in `hermes` subcommands that arrive as plugin registrations (issue 25): `profile`,
`auth` and `model` are registered with ``ctx.register_cli_command`` exactly as a third-party
plugin registers its own, so the CLI's one path for plugin commands is the one these take.

The help lines live here, so ``hermes --help`` lists the commands without importing them; each
command's module is imported when its arguments are set up (``setup``) or it runs.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

COMMANDS = (
    ("profile", "hermes_cli.profile_cmd",
     "list, create, use, show or delete profiles (own config, memory, skills, sessions)"),
    ("auth", "hermes_cli.auth_cmd", "list, add or remove API keys of the providers' key pools"),
    ("model", "hermes_cli.model_cmd",
     "list the endpoint's models; `hermes model NAME` saves one"),
)


def _late(module: str, name: str) -> Callable[[Any], Any]:
    def call(arg: Any) -> Any:
        return getattr(importlib.import_module(module), name)(arg)
    return call


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    for name, module, help_line in COMMANDS:
        ctx.register_cli_command(name, setup=_late(module, "setup"), handler=_late(module, "run"),
                                 help=help_line)
