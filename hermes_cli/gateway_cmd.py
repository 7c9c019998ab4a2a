"""``hermes gateway run|setup|status``: the launcher's side of the gateway (flags in,
``gateway.serve``; ``setup``: ``hermes_cli.gateway_setup``).

Settings: flags > environment > ``config.yaml`` ``gateway:`` section > defaults
(``gateway.settings``). ``run --workers N`` starts its workers as this same command
(``python -m hermes_cli.main gateway run ... --worker i``), handed to the gateway as
``ServeOptions.worker_command``: the gateway never imports the launcher.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from hermes_core.config import ConfigError, load_config, load_env_file

WORKER_LAUNCH = ("-m", "hermes_cli.main", "gateway", "run")  # after sys.executable


def add_parser(sub: Any) -> None:
    p = sub.add_parser("gateway", help="run the gateway (API server, chat platforms, webhooks), "
                       "set up its platforms, or show its status",
                       description="Run the messaging gateway and API server.")
    acts = p.add_subparsers(dest="cmd", required=True)
    run = acts.add_parser("run",
                          help="run in the foreground (logs to HERMES_HOME/logs/gateway.log)")
    run.add_argument("--api-server", action="store_true",
                     help="enable the OpenAI-compatible API server")
    run.add_argument("--host", help="API server address (default 127.0.0.1)")
    run.add_argument("--port", type=int, help="API server port (default 8642; 0 picks a free one)")
    run.add_argument("--no-telegram", action="store_true",
                     help="do not start Telegram even if a token is set")
    run.add_argument("--busy-policy", choices=("queue", "interrupt"),
                     help="a message for a busy session")
    run.add_argument("--drain-timeout", type=float,
                     help="seconds running turns get on SIGTERM (default 60)")
    run.add_argument("--workers", type=int, help="worker processes sharing the API port (default "
                                                 "1; more need a PostgreSQL store)")
    run.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # the supervisor's workers
    run.add_argument("-v", "--verbose", action="store_true")
    run.set_defaults(func=cmd_run)
    from hermes_cli.gateway_setup import add_parser as add_setup

    add_setup(acts)  # hermes gateway setup
    st = acts.add_parser("status", help="is a gateway running here?")
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_status)


def run_flags(args: argparse.Namespace) -> list[str]:
    """The ``run`` flags a ``--workers`` supervisor hands each worker (all but ``--workers`` and
    ``--port``)."""
    flags = ["--api-server"] if args.api_server else []
    flags += ["--host", args.host] if args.host else []
    flags += ["--no-telegram"] if args.no_telegram else []
    flags += ["--busy-policy", args.busy_policy] if args.busy_policy else []
    flags += ["--drain-timeout", str(args.drain_timeout)] if args.drain_timeout is not None else []
    return flags + (["-v"] if args.verbose else [])


def serve_options(args: argparse.Namespace) -> Any:
    """``gateway.settings.ServeOptions`` from the parsed ``run`` flags."""
    from gateway.settings import ServeOptions

    return ServeOptions(
        api_server=args.api_server, host=args.host, port=args.port,
        skip_platforms=frozenset(["telegram"] if args.no_telegram else []),
        busy_policy=args.busy_policy, drain_timeout=args.drain_timeout, workers=args.workers,
        worker=args.worker, verbose=args.verbose,
        worker_command=(sys.executable, *WORKER_LAUNCH, *run_flags(args)))


def cmd_run(args: argparse.Namespace) -> int:
    from gateway.serve import serve

    try:
        load_env_file()
        return serve(serve_options(args), load_config())
    except ConfigError as exc:  # whatever step read the configuration: one line, no traceback
        print(f"hermes gateway: {exc}", file=sys.stderr)
        return 1


def cmd_status(args: argparse.Namespace) -> int:
    from hermes_cli.gateway_status import print_status

    return print_status(args.json)
