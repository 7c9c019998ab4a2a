"""`hermes model [NAME]`: the endpoint's models, and the one to use saved (issue 25).

Without NAME: the list of the configured provider's endpoint (`--provider`, `--base-url` pick
another), `*` on the current model; at a terminal, a number picks one. With NAME (or a pick):
``model.default`` is written to config.yaml, plus ``model.provider`` when --provider was given.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Optional

from hermes_core.config import ConfigError


def setup(p: argparse.ArgumentParser) -> None:
    """The arguments of `hermes model` (registered by hermes_cli.cli_plugin)."""
    p.add_argument("name", nargs="?", metavar="NAME", help="the model to use from now on")


def _save(name: str, provider: Optional[str]) -> list[str]:
    from hermes_core.config_edit import set_key

    lines = [set_key("model.default", name)]
    if provider:
        lines.append(set_key("model.provider", provider))
    return lines


PICK_ATTEMPTS = 3  # answers that match nothing before `hermes model` gives up (nothing saved)


def pick_answer(answer: str, ids: list[str]) -> Optional[str]:
    """The model an answer names: a number of the list or one of its names; None: neither (a
    typo must not become the saved model; `hermes model NAME` saves an unlisted one on purpose)."""
    answer = answer.strip()
    if answer.isdigit():
        return ids[int(answer) - 1] if 1 <= int(answer) <= len(ids) else None
    return answer if answer in ids else None


def _pick(ids: list[str]) -> Optional[str]:
    """Ask until an answer names a listed model; Enter, end of input or too many misses: None."""
    for _ in range(PICK_ATTEMPTS):
        try:
            answer = input("Number or name (Enter keeps the current one): ").strip()
        except EOFError:
            return None
        if not answer:
            return None
        chosen = pick_answer(answer, ids)
        if chosen is not None:
            return chosen
        sys.stdout.write(f"{answer!r} is not one of the list: give a number from 1 to "
                         f"{len(ids)} or a listed name\n")
    raise ValueError(f"no model picked after {PICK_ATTEMPTS} answers that match nothing in the "
                     "list; nothing was saved (`hermes model NAME` saves any name)")


def run(args: argparse.Namespace) -> int:
    from agent.providers import model_choice
    from hermes_cli.agent_factory import provider_settings
    from hermes_core.config import load_config

    ps = provider_settings(args, load_config())
    found = None if args.name and ps.provider == "local" else model_choice.endpoint_models(ps)
    name = args.name
    if not name:
        for line in model_choice.list_lines(found, ps.model):
            sys.stdout.write(line + "\n")
        if found is None or not found.ids or not sys.stdin.isatty():
            return 0 if found is None or found.ids else 1
        name = _pick(found.ids)
        if name is None:
            return 0
    elif found is not None and found.ids and name not in found.ids:
        sys.stderr.write(f"hermes: warning: {found.url} does not list {name}; saved anyway\n")
    try:
        for line in _save(name, getattr(args, "provider", None)):
            sys.stdout.write(line + "\n")
    except ConfigError as exc:
        sys.stderr.write(f"hermes: error: {exc}\n")
        return 2
    return 0
