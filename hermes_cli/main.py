"""`hermes`: the command line. Parses arguments and dispatches; everything heavy is imported late.

`hermes` (or `hermes chat`) chats, `-q`/`-z` answer once, and `sessions`, `config`, `setup`,
`doctor` manage the installation. Failures end in ONE line on stderr (`hermes: error: ...`) and a
non-zero exit (2 for unusable configuration); tracebacks only with --debug.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Optional

from hermes_cli.parsing import (OneLineParser, VersionAction, positive_int, provider_help,
                                provider_name)


def _add_agent_flags(p: argparse.ArgumentParser, sub: bool) -> None:
    """Flags shared by `hermes` and `hermes chat`; the subparser copy must not reset top-level
    values."""
    d: dict[str, Any] = {"default": argparse.SUPPRESS} if sub else {}
    dflag: dict[str, Any] = {"default": argparse.SUPPRESS} if sub else {"default": False}
    p.add_argument("-q", "--query", metavar="MSG",
                   help="answer one message, then exit (progress on stderr)", **d)
    p.add_argument("-m", "--model", help="model name", **d)
    p.add_argument("--provider", type=provider_name, help=provider_help(), **d)
    p.add_argument("--base-url", metavar="URL",
                   help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1", **d)
    p.add_argument("--api-key", metavar="KEY",
                   help="API key (prefer OPENAI_API_KEY or `hermes setup`)", **d)
    p.add_argument("-t", "--toolsets", metavar="LIST",
                   help="comma-separated toolsets to enable", **d)
    p.add_argument("-r", "--resume", metavar="ID",
                   help="continue a session by id, id prefix or title", **d)
    p.add_argument("-c", "--continue", dest="continue_last", action="store_true",
                   help="continue the most recent cli session", **dflag)
    p.add_argument("--max-turns", type=positive_int, metavar="N",
                   help="cap on model calls per message", **d)
    p.add_argument("--yolo", action="store_true", **dflag,
                   help="run dangerous commands (and the embedded model's changes) without asking")
    p.add_argument("--debug", action="store_true", help="verbose logs and full tracebacks", **dflag)
    p.add_argument("--image", action="append", dest="images", metavar="PATH",
                   help="attach an image to the (first) message; repeatable", **d)


# `hermes COMMAND`: each module's add_parser binds its handlers with set_defaults(func=...); the
# order is --help's. Commands plugins register (`profile`, `auth`, `model` among them:
# hermes_cli.cli_plugin) follow, added by hermes_cli.plugin_commands.
COMMAND_MODULES = ("sessions", "memory_cmd", "skills_cmd", "cron_cmd", "store_cmd",
                   "checkpoints_cmd", "config_cmd", "setup", "doctor", "mcp_cmd", "plugins_cmd",
                   "dashboard_cmd", "acp_cmd", "gateway_cmd", "pairing_cmd")
NO_DOTENV = ("sessions", "memory", "skills", "setup")  # they never read HERMES_HOME/.env
QUIET_CONFIG = ("doctor", "gateway", "pairing")  # name unknown keys themselves (or not at all)


def build_parser() -> argparse.ArgumentParser:
    """The parser of `hermes`: its own commands, then those plugins registered. (Plugins are
    loaded by then anyway: --provider's help lists the providers they register.)"""
    import importlib

    from hermes_cli import plugin_commands

    p = OneLineParser(
        prog="hermes", description="A self-hosted AI agent. With no command: an interactive chat.",
        epilog="`hermes COMMAND --help` describes each command.")
    _add_agent_flags(p, sub=False)
    p.add_argument("-z", metavar="MSG", dest="oneshot_quiet",
                   help="answer one message; print only the final answer")
    p.add_argument("--version", action=VersionAction)
    p.add_argument("-p", "--profile", metavar="NAME",
                   help="run in profile NAME (HERMES_HOME/profiles/NAME; also HERMES_PROFILE)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    pc = sub.add_parser("chat", help="interactive chat (the default), or -q MSG for one answer")
    _add_agent_flags(pc, sub=True)
    pc.add_argument("-z", metavar="MSG", dest="oneshot_quiet", default=argparse.SUPPRESS,
                    help="answer one message; print only the final answer")
    pc.set_defaults(func=run_chat)
    for name in COMMAND_MODULES:
        importlib.import_module(f"hermes_cli.{name}").add_parser(sub)
    plugin_commands.add_registered(sub, list(sub.choices))
    return p


def _error(msg: str) -> None:
    sys.stderr.write(f"hermes: error: {msg}\n")
    sys.stderr.flush()


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def _load_config() -> Any:
    from hermes_core.config import load_config, load_env_file

    load_env_file()
    return load_config()


def config_warnings(args: argparse.Namespace) -> list[str]:
    """Keys of config.yaml nothing reads (typos, mostly), each with the closest known key; doctor
    lists them itself, the gateway logs them, and junk YAML is the command's own one-line error."""
    if args.command in QUIET_CONFIG:
        return []
    from hermes_core.config import ConfigError, config_path, read_raw_config
    from hermes_core.config_keys import warning_lines

    try:
        return warning_lines(read_raw_config(), str(config_path()))
    except ConfigError:
        return []


def dispatch(args: argparse.Namespace) -> int:
    """Run the handler the parser bound (``set_defaults(func=...)``); no command: the chat."""
    func = getattr(args, "func", None) or (run_chat if args.command is None else None)
    if func is None:
        raise RuntimeError(f"`hermes {args.command}` has no handler (a bug: report it)")
    if args.command not in NO_DOTENV:
        from hermes_core.config import load_env_file

        load_env_file()
    return func(args)


def run_chat(args: argparse.Namespace) -> int:
    """``hermes [chat]``: one-shot (``-q``/``-z``, or a question piped on stdin) or the REPL."""
    quiet_msg: Optional[str] = getattr(args, "oneshot_quiet", None)
    query: Optional[str] = getattr(args, "query", None)
    if quiet_msg is None and query is None and not sys.stdin.isatty():
        query = sys.stdin.read()  # `echo question | hermes`
        if not query.strip():
            raise ValueError("nothing to answer: stdin was empty and no -q/-z message was given")
    cfg = _load_config()
    from hermes_cli import oneshot

    for text in (quiet_msg, query):
        if text is not None and not text.strip():
            raise ValueError("the message is empty; give the question after -q or -z")
    if quiet_msg is not None:
        return oneshot.run(args, cfg, quiet_msg, quiet=True)
    if query is not None:
        return oneshot.run(args, cfg, query, quiet=False)
    from hermes_cli.chat import run_repl

    return run_repl(args, cfg)


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from hermes_core import profiles

    try:  # before anything reads HERMES_HOME: the profile decides where it is
        flag, argv = profiles.take_flag(argv)
        profiles.apply(flag)
    except profiles.ProfileError as exc:
        _error(str(exc))
        return 2
    args = build_parser().parse_args(argv)
    debug = bool(getattr(args, "debug", False))
    import logging

    if debug:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
    else:  # stderr belongs to the user (and to scripts: one line on failure); logs are for --debug
        logging.getLogger().addHandler(logging.NullHandler())
    try:
        args.config_warnings = config_warnings(args)
        if getattr(args, "oneshot_quiet", None) is None:  # -z writes them after its answer
            for line in args.config_warnings:
                sys.stderr.write(f"hermes: warning: {line}\n")
        return dispatch(args)
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        except OSError:
            pass
        return 1
    except Exception as exc:  # noqa: BLE001 - the one place errors become one line
        if debug:
            import traceback

            traceback.print_exc()
        from hermes_core.config import ConfigError
        from tools.registry import UnknownToolsetError

        usage = type(exc).__name__ == "UsageError"
        if usage or isinstance(exc, (ConfigError, UnknownToolsetError)):
            _error(_one_line(exc))
            return 2
        if type(exc).__name__ in ("CommandError", "TurnFailed", "SessionDBError", "ValueError"):
            _error(_one_line(exc))
            if type(exc).__name__ == "SessionDBError" and getattr(exc, "unusable_config", False):
                return 2  # e.g. a PostgreSQL store that cannot be reached
        else:  # unexpected: name the kind so a bug report says something
            _error(f"{type(exc).__name__}: {_one_line(exc)} (rerun with --debug for details)")
        status = getattr(exc, "status", 1) if type(exc).__name__ == "TurnFailed" else 1
        return status if isinstance(status, int) and 0 < status < 126 else 1


if __name__ == "__main__":
    sys.exit(main())
