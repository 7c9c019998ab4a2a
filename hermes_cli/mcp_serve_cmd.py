"""``hermes mcp serve``: Hermes as an MCP server on stdio (``mcp_server``), backed by an
in-process gateway runner: the same agents as the API server (``gateway.toolsets``, confined to
the gateway's working dir), the same runs (``/v1/runs``' machinery: approvals parked until
answered), the same store. stdout is the protocol; logs go to ``HERMES_HOME/logs/mcp-serve.log``.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Optional

from mcp.server.mcpserver.exceptions import ToolError

log = logging.getLogger("hermes.mcp_serve")


class GatewayBackend:
    """``mcp_server.tools.Backend`` over a GatewayRunner and a RunBook (call on one loop)."""

    def __init__(self, cfg: Any) -> None:
        from cron.scheduler import Scheduler
        from gateway.access import AccessControl, PairingStore
        from gateway.platforms.api_server.run_book import RunBook
        from gateway.runner import GatewayRunner, default_agent_factory
        from hermes_state import SessionDB

        self.db = SessionDB()
        self.runner = GatewayRunner(session_db=self.db,
                                    agent_factory=default_agent_factory(cfg, self.db),
                                    access=AccessControl(PairingStore()))
        self.book = RunBook()
        self.scheduler = Scheduler(self.db, cfg)

    async def start(self) -> None:
        await self.runner.start()

    async def stop(self) -> None:
        await self.runner.shutdown(drain_timeout=10)
        await asyncio.to_thread(self.scheduler.shutdown, 5)
        self.db.close()

    async def conversations(self, limit: int, query: Optional[str]) -> list[dict[str, Any]]:
        if query:
            hits, _ = await asyncio.to_thread(self.db.search_sessions, query, limit, 0, "newest",
                                              True)
            return hits
        rows, _ = await asyncio.to_thread(self.db.recent_sessions, limit, 0, False)
        return rows

    async def read(self, session_id: str, limit: int) -> dict[str, Any]:
        if await asyncio.to_thread(self.db.get_session, session_id) is None:
            raise ToolError(f"no conversation {session_id!r}; conversations_list shows them")
        rows = await asyncio.to_thread(self.db.get_messages, session_id)
        keep = ("role", "content", "tool_name", "created_at")
        return {"session_id": session_id, "messages": [{k: r.get(k) for k in keep}
                                                       for r in rows[-limit:]]}

    async def send(self, text: str, session_id: Optional[str], wait: float) -> dict[str, Any]:
        from gateway.platforms.api_server.runs import start_run
        from gateway.platforms.api_server.session_headers import key_for_session_id
        from hermes_state import new_session_id

        if not text.strip():
            raise ToolError("the message is empty")
        if session_id is None:
            session_id = await asyncio.to_thread(self.db.create_session, new_session_id(),
                                                 "api_server")
        elif await asyncio.to_thread(self.db.get_session, session_id) is None:
            raise ToolError(f"no conversation {session_id!r}; leave session_id empty for a new one")
        key = await key_for_session_id(self.runner, session_id)
        run = start_run(self.runner, self.book, key, text, session_id)
        return await self._settled(run, wait)

    async def status(self, run_id: str, wait: float) -> dict[str, Any]:
        return await self._settled(self._run(run_id), wait)

    async def approvals(self) -> list[dict[str, Any]]:
        return [{"run_id": r.id, "session_id": r.session_id, **r.pending.view()}
                for r in self.book.active() if r.pending is not None]

    async def answer(self, run_id: str, choice: str, wait: float) -> dict[str, Any]:
        from gateway.platforms.api_server.run_book import CHOICES

        run = self._run(run_id)
        if choice not in CHOICES:
            raise ToolError(f"choice must be one of {', '.join(CHOICES)}")
        if run.answer(choice) is None:
            raise ToolError(f"run {run_id} has no pending approval (status {run.status})")
        await asyncio.sleep(0.05)  # let the agent pick the answer up before waiting on it
        return await self._settled(run, wait)

    async def jobs(self) -> list[dict[str, Any]]:
        from cron.views import job_view

        return [job_view(j) for j in await asyncio.to_thread(self.db.list_cron_jobs)]

    async def run_job(self, job: str) -> dict[str, Any]:
        from cron import jobs

        try:
            found = await asyncio.to_thread(jobs.resolve_job, self.db, job)
        except jobs.JobError as exc:
            raise ToolError(str(exc)) from None
        started, _ = await asyncio.to_thread(self.scheduler.run_now, found)
        return {"job_id": found["id"], "run_id": started["run_id"], "status": "running",
                "deliver": found.get("deliver")}

    def _run(self, run_id: str) -> Any:
        run = self.book.get(run_id)
        if run is None:
            raise ToolError(f"no run {run_id!r} (finished runs are kept for an hour)")
        return run

    async def _settled(self, run: Any, wait: float) -> dict[str, Any]:
        """Wait until the run ends or asks a question, at most ``wait`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while not run.done and run.pending is None and loop.time() < deadline:
            async with run.changed:
                try:
                    await asyncio.wait_for(run.changed.wait(), min(0.5, deadline - loop.time()))
                except asyncio.TimeoutError:
                    pass
        view = run.view()
        out = {k: view[k] for k in ("run_id", "status", "session_id", "output", "error")}
        if view["pending_approval"]:
            out["pending_approval"] = view["pending_approval"]
            out["next"] = "answer it with approval_answer, or stop waiting: run_status later"
        return out


def _log_to_file() -> None:
    from hermes_core.config import hermes_home
    from hermes_core.home import ensure_private_dir

    handler = logging.FileHandler(ensure_private_dir(hermes_home() / "logs") / "mcp-serve.log",
                                  encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.INFO)
    for noisy in ("httpx", "httpcore", "openai", "mcp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def run(args: Any) -> int:
    from hermes_cli.parsing import version
    from hermes_core.config import load_config
    from hermes_core.home import ensure_home
    from mcp_server.tools import build

    cfg = load_config()
    ensure_home()
    _log_to_file()

    async def main() -> None:
        from tools.mcp.manager import shutdown_servers, start_servers

        backend = GatewayBackend(cfg)
        start_servers(cfg)
        await backend.start()
        try:
            await build(backend, version()).run_stdio_async()
        finally:
            await backend.stop()
            await asyncio.to_thread(shutdown_servers)

    asyncio.run(main())
    return 0
