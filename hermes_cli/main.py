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
    """Flags shared by `hermes` and `hermes chat`; the subparser copy must not reset top-level values."""
    d: dict[str, Any] = {"default": argparse.SUPPRESS} if sub else {}
    dflag: dict[str, Any] = {"default": argparse.SUPPRESS} if sub else {"default": False}
    p.add_argument("-q", "--query", metavar="MSG", help="answer one message, then exit (progress on stderr)", **d)
    p.add_argument("-m", "--model", help="model name", **d)
    p.add_argument("--provider", type=provider_name, help=provider_help(), **d)
    p.add_argument("--base-url", metavar="URL", help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1", **d)
    p.add_argument("--api-key", metavar="KEY", help="API key (prefer OPENAI_API_KEY or `hermes setup`)", **d)
    p.add_argument("-t", "--toolsets", metavar="LIST", help="comma-separated toolsets to enable", **d)
    p.add_argument("-r", "--resume", metavar="ID", help="continue a session by id, id prefix or title", **d)
    p.add_argument("-c", "--continue", dest="continue_last", action="store_true",
                   help="continue the most recent cli session", **dflag)
    p.add_argument("--max-turns", type=positive_int, metavar="N", help="cap on model calls per message", **d)
    p.add_argument("--yolo", action="store_true", **dflag,
                   help="run dangerous commands (and the embedded model's changes) without asking")
    p.add_argument("--debug", action="store_true", help="verbose logs and full tracebacks", **dflag)
    p.add_argument("--image", action="append", dest="images", metavar="PATH",
                   help="attach an image to the (first) message; repeatable", **d)


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="hermes", description="A self-hosted AI agent. With no command: an interactive chat.",
        epilog="`hermes COMMAND --help` describes each command.")
    _add_agent_flags(p, sub=False)
    p.add_argument("--version", action=VersionAction)
    p.add_argument("-p", "--profile", metavar="NAME",
                   help="run in profile NAME (HERMES_HOME/profiles/NAME; also HERMES_PROFILE)")
    p.add_argument("-z", metavar="MSG", dest="oneshot_quiet",
                   help="answer one message; print only the final answer")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    pc = sub.add_parser("chat", help="interactive chat (the default), or -q MSG for one answer")
    _add_agent_flags(pc, sub=True)
    pc.add_argument("-z", metavar="MSG", dest="oneshot_quiet", default=argparse.SUPPRESS,
                    help="answer one message; print only the final answer")

    from hermes_cli.memory_cmd import add_parser as add_memory
    from hermes_cli.sessions import add_parser as add_sessions

    add_sessions(sub)
    add_memory(sub)
    from hermes_cli.skills_cmd import add_parser as add_skills

    add_skills(sub)

    from hermes_cli.cron_cmd import add_parser as add_cron

    add_cron(sub)
    from hermes_cli.store_cmd import add_parser as add_store

    add_store(sub)
    from hermes_cli.checkpoints_cmd import add_parser as add_checkpoints

    add_checkpoints(sub)

    pg = sub.add_parser("config", help="show, get or set configuration")
    cs = pg.add_subparsers(dest="config_action", metavar="ACTION")
    sh = cs.add_parser("show", help="config.yaml with secrets masked")
    sh.add_argument("--prompt", action="store_true",
                    help="instead: the fixed prompt's tokens by part (system prompt + tool schemas)")
    g = cs.add_parser("get", help="one value by dotted key, e.g. model.default")
    g.add_argument("key", metavar="KEY")
    s = cs.add_parser("set", help="set a dotted key (secrets go to .env, mode 600)")
    s.add_argument("key", metavar="KEY")
    s.add_argument("value", metavar="VALUE")
    s.add_argument("--force", action="store_true", help="write a key hermes does not know")
    cs.add_parser("path", help="where config.yaml lives")

    ps = sub.add_parser("setup", help="choose a model provider (wizard, or flags with --non-interactive)")
    ps.add_argument("--non-interactive", action="store_true", help="use the flags, ask nothing")
    ps.add_argument("--provider", dest="setup_provider", type=provider_name, help=provider_help())
    ps.add_argument("--base-url", dest="setup_base_url", metavar="URL")
    ps.add_argument("--model", dest="setup_model")
    ps.add_argument("--api-key", dest="setup_api_key", metavar="KEY")
    ps.add_argument("--model-path", dest="setup_model_path", metavar="GGUF", help="GGUF file for provider local")

    sub.add_parser("doctor", help="check config, provider, session store and local model")

    from hermes_cli.mcp_cmd import add_parser as add_mcp

    add_mcp(sub)
    from hermes_cli.plugins_cmd import add_parser as add_plugins

    add_plugins(sub)
    from hermes_cli.dashboard_cmd import add_parser as add_dashboard

    add_dashboard(sub)
    from hermes_cli.acp_cmd import add_parser as add_acp

    add_acp(sub)
    from hermes_cli.profile_cmd import add_parser as add_profile

    add_profile(sub)
    from hermes_cli.auth_cmd import add_parser as add_auth

    add_auth(sub)
    from hermes_cli.model_cmd import add_parser as add_model

    add_model(sub)

    # listed for --help; main() hands these to gateway/cli.py, which parses its own flags
    sub.add_parser("gateway", help="run the gateway (API server, Telegram) or show its status")
    sub.add_parser("pairing", help="approve, list or revoke chat users who asked for access")
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
    lists them itself, and junk YAML is the command's own one-line error."""
    if args.command == "doctor":
        return []
    from hermes_core.config import ConfigError, config_path, read_raw_config
    from hermes_core.config_keys import warning_lines

    try:
        return warning_lines(read_raw_config(), str(config_path()))
    except ConfigError:
        return []


def dispatch(args: argparse.Namespace) -> int:
    cmd = args.command
    func = getattr(args, "func", None)
    if func is not None:  # commands bound with set_defaults(func=...)
        from hermes_core.config import load_env_file

        load_env_file()
        return func(args)
    if cmd == "sessions":
        from hermes_cli import sessions

        return sessions.run(args)
    if cmd == "memory":
        from hermes_cli import memory_cmd

        return memory_cmd.run(args)
    if cmd == "skills":
        from hermes_cli import skills_cmd

        return skills_cmd.run(args)
    if cmd == "cron":
        from hermes_core.config import load_env_file
        from hermes_cli import cron_cmd

        load_env_file()
        return cron_cmd.run(args)
    if cmd == "store":
        from hermes_core.config import load_env_file
        from hermes_cli import store_cmd

        load_env_file()
        return store_cmd.run(args)
    if cmd == "config":
        from hermes_core.config import load_env_file
        from hermes_cli import config_cmd

        load_env_file()
        return config_cmd.run(args)
    if cmd == "setup":
        from hermes_cli import setup

        return setup.run(args)
    if cmd == "mcp":
        from hermes_core.config import load_env_file
        from hermes_cli import mcp_cmd

        load_env_file()
        return mcp_cmd.run(args)
    if cmd == "doctor":
        from hermes_core.config import load_env_file
        from hermes_cli import doctor

        load_env_file()
        return doctor.run(args)

    # chat: one-shot or interactive
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
    if argv and argv[0] in ("gateway", "pairing"):  # they parse their own flags, --help included
        from gateway import cli as gateway_cli

        return (gateway_cli.gateway_main if argv[0] == "gateway" else gateway_cli.pairing_main)(argv[1:])
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
