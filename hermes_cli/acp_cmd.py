"""``hermes acp``: Hermes as an Agent Client Protocol agent on stdio, for editors (Zed,
JetBrains, VS Code ACP clients) that start it as a child process.

stdout carries the protocol only: nothing else is ever printed there; logs go to
``HERMES_HOME/logs/acp.log``. Agents are built like the REPL's (config, provider, toolsets), in
the editor's folder, with approvals asked in the editor (``session/request_permission``).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Optional


def add_parser(sub: Any) -> None:
    p = sub.add_parser("acp", help="serve editors over the Agent Client Protocol (stdio)")
    p.set_defaults(func=run)


def _log_to_file() -> None:
    from hermes_core.config import hermes_home
    from hermes_core.home import ensure_private_dir

    logs = ensure_private_dir(hermes_home() / "logs")
    handler = logging.FileHandler(logs / "acp.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    for noisy in ("httpx", "httpcore", "openai"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def run(args: Any) -> int:
    from acp import run_agent

    from acp_agent.agent import HermesAgent
    from hermes_cli.agent_factory import build_agent
    from hermes_cli.parsing import version
    from hermes_core.config import load_config
    from hermes_core.home import ensure_home
    from hermes_state import SessionDB
    from tools.mcp.manager import shutdown_servers, start_servers

    cfg = load_config()
    ensure_home()
    _log_to_file()
    db = SessionDB()
    start_servers(cfg, report=lambda kind, line: logging.getLogger("hermes.mcp").info(line))

    def factory(session_id: Optional[str], cwd: str) -> Any:
        return build_agent(args, cfg, session_db=db, session_id=session_id, interactive=True,
                           cwd=cwd, platform="acp")

    agent = HermesAgent(factory, db, version())
    try:
        asyncio.run(run_agent(agent))
    finally:
        agent.close()
        shutdown_servers()
        db.close()
    return 0
