"""Argument parsing for scripts: a usage error is ONE line on stderr and exit 2.

argparse prints the whole usage block before its error; a script that reads stderr wants the one
line that says what was wrong. ``--help`` still shows the usage. Subparsers made through
``add_subparsers`` inherit the class, so every `hermes ...` command behaves the same.
"""
from __future__ import annotations

import argparse
import sys
from typing import NoReturn

DIST_NAME = "hermes-runtime"


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        text = " ".join(message.split())
        sys.stderr.write(f"{self.prog}: error: {text} (see `{self.prog} --help`)\n")
        sys.exit(2)


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def provider_name(text: str) -> str:
    """An argparse type: a provider of hermes_core.provider_table (aliases allowed), else a usage
    error listing the known ones."""
    from hermes_core.provider_table import UnknownProvider, lookup

    try:
        info = lookup(text)
    except UnknownProvider as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return info.name if info else "auto"


def provider_help() -> str:
    from hermes_core.provider_table import known_names

    return f"{known_names()} (default: worked out from what is configured)"


class VersionAction(argparse.Action):
    """``--version``: looks the version up only when asked (the metadata scan costs start-up
    time)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object,
                 **kwargs: object) -> NoReturn:
        sys.stdout.write(f"{parser.prog} {version()}\n")
        sys.exit(0)


def version() -> str:
    """``hermes --version``: the installed distribution's version."""
    from importlib import metadata

    try:
        return metadata.version(DIST_NAME)
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed; run `make test` or `pip install -e .`)"
