"""``hermes dashboard [--port 9119]``: the web dashboard on its own, without a gateway.

It serves what ``hermes gateway run`` serves with ``gateway.dashboard: true`` (the same API server,
security checks and agents: ``gateway.toolsets`` confined to the gateway's working dir), on
127.0.0.1:9119, behind a token made at start and printed (``HERMES_DASHBOARD_TOKEN`` sets one).
Cron jobs are listed, made and run from the page; their schedule is served by the gateway (or
``hermes cron tick``), not here. Ctrl+C stops it; turns still running get a short drain.
"""
from __future__ import annotations

import asyncio
import os
import secrets
import signal
import sys
from typing import Any

DEFAULT_PORT = 9119
DRAIN_SECONDS = 10.0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("dashboard", help="the web dashboard on 127.0.0.1:9119 (prints a token)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default 9119; 0: any)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address (default 127.0.0.1; another one is reachable from the network)")
    p.set_defaults(func=run)


def run(args: Any) -> int:
    from hermes_core.config import load_config
    from hermes_core.home import ensure_home

    cfg = load_config()
    ensure_home()
    token = os.environ.get("HERMES_DASHBOARD_TOKEN") or secrets.token_urlsafe(24)
    try:
        return asyncio.run(serve(args, cfg, token))
    except OSError as exc:
        raise ValueError(f"cannot listen on {args.host}:{args.port} ({exc.strerror or exc}); "
                         "pick another --port or stop what uses it") from None


def build(cfg: Any, host: str, port: int, token: str) -> tuple[Any, Any]:
    """(runner, api server) with the dashboard and the jobs API mounted; not started."""
    from agent.tool_policy import run_policy
    from cron.scheduler import Scheduler
    from dashboard.routes import register as dashboard_routes
    from gateway.access import AccessControl, PairingStore
    from gateway.cron_api import jobs_api
    from gateway.platforms.api_server import APIServer
    from gateway.runner import GatewayRunner, default_agent_factory
    from hermes_state import SessionDB

    db = SessionDB()
    runner = GatewayRunner(session_db=db, agent_factory=default_agent_factory(cfg, db),
                           access=AccessControl(PairingStore()))
    api = APIServer(runner, host=host, port=port, key=token)
    api.dashboard_host = "hermes dashboard"
    api.add_routes(dashboard_routes)
    api.add_routes(jobs_api(Scheduler(db, cfg), run_policy(cfg)))
    return runner, api


async def serve(args: Any, cfg: Any, token: str) -> int:
    from tools.mcp.manager import shutdown_servers, start_servers

    runner, api = build(cfg, args.host, args.port, token)
    start_servers(cfg)
    await runner.start()
    await api.start()
    address = f"http://{'127.0.0.1' if args.host in ('0.0.0.0', '') else args.host}:{api.port}"
    sys.stdout.write(f"Hermes dashboard: {address}/dashboard/\n"
                     f"token: {token}\n"
                     f"(or open {address}/dashboard/#token={token})\n"
                     f"READY dashboard pid={os.getpid()} url={address}/dashboard/\n")
    sys.stdout.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.shutdown(drain_timeout=DRAIN_SECONDS)
    await api.stop()
    await asyncio.to_thread(shutdown_servers)
    runner.db.close()
    return 0
