"""`hermes gateway setup [PLATFORM ...]`: ask each chat platform's settings (the questions its
plugin registered with ``setup=``, plus ``webhook``), check them, save them.

Checks, before anything is written: the shape of each value (``gateway.platforms.shapes``: a
Slack app token where the bot token goes is named at once), then a live check, the adapter's
own ``connect()`` against the configured server (Telegram's ``getMe``, Matrix's ``whoami``, an
IMAP login). Platform settings go to ``.env`` under Hermes' variable names (mode 600); a
webhook goes to config.yaml with its secret in ``.env``. Secrets are never printed.

Answers come from a terminal, from lines on stdin (tests, scripts), or with ``--non-interactive``
from ``--set VAR=VALUE`` and the environment only. Each platform is saved or refused on its own:
one that fails its check costs only itself.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from gateway.platforms import shapes
from hermes_core.config import ConfigError

WEBHOOK = "webhook"
Reader = Callable[[str], str]


class SetupRefused(Exception):
    """One platform's answers cannot be saved; the text says why and what to do."""


@dataclass
class Asker:
    """Where answers come from: a reader (a terminal or stdin lines), or none (flags only)."""

    reader: Optional[Reader]
    secret_reader: Optional[Reader]
    out: Any

    @property
    def interactive(self) -> bool:
        return self.reader is not None

    def ask(self, q: Any, current: str) -> str:
        assert self.reader is not None and self.secret_reader is not None
        if q.secret:
            keep = " (Enter keeps the current one)" if current else ""
            return self.secret_reader(f"{q.prompt}{keep}: ").strip() or current
        default = current or q.default
        suffix = f" [{default}]" if default else ""
        return self.reader(f"{q.prompt}{suffix}: ").strip() or default

    def yes(self, prompt: str) -> bool:
        return bool(self.reader) and self.reader(f"{prompt} [y/N]: ").strip().lower() in (
            "y", "yes")


def answers_for(questions: Sequence[Any], given: Mapping[str, str], current: Mapping[str, str],
                asker: Asker) -> dict[str, str]:
    """Each question's value: ``given`` (flags), else asked (Enter keeps ``current``), else
    ``current`` / the default; a missing or malformed value is asked again, or refused."""
    answers: dict[str, str] = {}
    for q in questions:
        value = given.get(q.env)
        while True:
            if value is None:
                value = (asker.ask(q, current.get(q.env, "")) if asker.interactive
                         else current.get(q.env, "") or q.default)
            why = (shapes.problem(q.env, value, q.secret) if value else
                   f"{q.env} is needed ({q.prompt})" if q.required else None)
            if why is None:
                break
            if not asker.interactive or q.env in given:
                raise SetupRefused(f"{why}; nothing was written")
            asker.out.write(f"✗ {why}\n")
            value = None
        if value:
            answers[q.env] = value
    return answers


def live_check(name: str, answers: Mapping[str, str], cfg: Any) -> str:
    """'' when the platform's adapter connects with these answers, else why not (secrets
    masked)."""
    from gateway.platform_plugins import platform_settings
    from gateway.platforms.direct import probe
    from hermes_core.plugin_api import REGISTRY
    from hermes_core.redact import redact

    reg = REGISTRY.get("platform", name)
    assert reg is not None
    env = {**os.environ, **answers}
    why = asyncio.run(probe(reg.value, platform_settings(cfg, name), env))
    return redact(why, [v for v in answers.values() if len(v) >= 8])


def save_env(answers: Mapping[str, str], secret: set[str], out: Any) -> None:
    from hermes_core.home import write_env_var

    for var, value in answers.items():
        path = write_env_var(var, value)
        shown = f"set ({len(value)} characters)" if var in secret else repr(value)
        out.write(f"  {var} {shown}\n")
    if answers:
        out.write(f"✓ saved in {path} (mode 600)\n")


def setup_platform(name: str, given: Mapping[str, str], asker: Asker, check: bool,
                   cfg: Any) -> None:
    from hermes_core.plugin_api import REGISTRY

    reg = REGISTRY.get("platform", name)
    questions = tuple(reg.options.get("setup") or ()) if reg is not None else ()
    asker.out.write(f"— {name}\n")
    answers = answers_for(questions, given, os.environ, asker)
    if check:
        why = live_check(name, answers, cfg)
        if not why:
            asker.out.write(f"✓ {name}: connected with these settings\n")
        else:
            asker.out.write(f"✗ {name}: the check failed: {why}\n")
            if not (asker.interactive and asker.yes("Save these settings anyway?")):
                raise SetupRefused(f"{name}: the check failed; nothing was written (fix the "
                                   "settings, or pass --no-check to save them unchecked)")
    save_env(answers, {q.env for q in questions if q.secret}, asker.out)


def setup_webhook(given: Mapping[str, str], asker: Asker) -> None:
    from gateway.platforms.webhook.setup import QUESTIONS, WebhookConfigError, plan
    from hermes_core.config import config_path, parse_config, read_raw_config
    from hermes_core.config_edit import write_config

    asker.out.write(f"— {WEBHOOK}\n")
    answers = answers_for(QUESTIONS, given, {}, asker)
    try:
        name, section, env_lines = plan(answers, os.environ)
    except WebhookConfigError as exc:
        raise SetupRefused(f"{exc}; nothing was written") from None
    raw = read_raw_config()
    gw = raw.get("gateway") if isinstance(raw.get("gateway"), dict) else {}
    hooks = gw.get("webhooks") if isinstance(gw.get("webhooks"), dict) else {}
    raw["gateway"] = {**gw, "webhooks": {**hooks, name: section}}
    parse_config(raw, str(config_path()))
    path = write_config(raw)
    save_env(env_lines, set(env_lines), asker.out)
    asker.out.write(f"✓ wrote gateway.webhooks.{name} to {path}: POST /webhooks/{name} on the "
                    f"API server (`hermes gateway run --api-server`); give the sender the secret "
                    f"in {section['secret_env']} ({section['signature']} signatures)\n")


def choose(named: Sequence[str], known: Sequence[str], asker: Asker) -> list[str]:
    unknown = [n for n in named if n not in known]
    if unknown:
        raise ConfigError(f"no platform {', '.join(map(repr, unknown))}; choose from "
                          f"{', '.join(known)}")
    if named:
        return list(named)
    if not asker.interactive:
        raise ConfigError("name the platforms to set up with --non-interactive: "
                          + ", ".join(known))
    return [n for n in known if asker.yes(f"Set up {n}?")]


def platform_choices() -> list[str]:
    from gateway.platform_plugins import platform_names
    from hermes_core.config import ensure_plugins
    from hermes_core.plugin_api import REGISTRY

    ensure_plugins()
    asked = [n for n in platform_names()
             if getattr(REGISTRY.get("platform", n), "options", {}).get("setup")]
    return asked + [WEBHOOK]


def parse_values(pairs: Sequence[str]) -> dict[str, str]:
    given: dict[str, str] = {}
    for pair in pairs:
        var, eq, value = pair.partition("=")
        if not eq or not var.strip():
            raise ConfigError(f"--set takes VAR=VALUE, not {pair.split('=')[0]!r}")
        given[var.strip()] = value.strip()
    return given


def run(args: argparse.Namespace, out: Any = sys.stdout) -> int:
    from hermes_core.config import load_config, load_env_file

    load_env_file()
    given = parse_values(args.values)
    if args.non_interactive:
        asker = Asker(None, None, out)
    else:
        import getpass

        asker = Asker(input, getpass.getpass if sys.stdin.isatty() else input, out)
    cfg = load_config()
    refused = 0
    try:
        for name in choose(args.platforms, platform_choices(), asker):
            try:
                if name == WEBHOOK:
                    setup_webhook(given, asker)
                else:
                    setup_platform(name, given, asker, not args.no_check, cfg)
            except SetupRefused as exc:
                out.write(f"✗ {exc}\n")
                refused += 1
    except (EOFError, KeyboardInterrupt):
        out.write("\nSet-up cancelled; what was saved above stays, nothing else was written.\n")
        return 1
    if not refused:
        out.write("Next: `hermes gateway run` serves them (`hermes doctor` checks the set-up).\n")
    return 1 if refused else 0


def add_parser(acts: Any) -> None:
    p = acts.add_parser("setup", help="ask each chat platform's settings, check them, save them")
    p.add_argument("platforms", nargs="*", metavar="PLATFORM",
                   help="telegram, discord, slack, matrix, email, webhook (default: ask)")
    p.add_argument("--non-interactive", action="store_true",
                   help="ask nothing: values from --set and the environment")
    p.add_argument("--set", dest="values", action="append", default=[], metavar="VAR=VALUE",
                   help="a setting by its variable name, e.g. TELEGRAM_BOT_TOKEN=...")
    p.add_argument("--no-check", action="store_true",
                   help="save without connecting to the platform first")
    p.set_defaults(func=cmd_setup)


def cmd_setup(args: argparse.Namespace) -> int:
    try:
        return run(args)
    except ConfigError as exc:
        print(f"hermes gateway setup: {exc}", file=sys.stderr)
        return 2
