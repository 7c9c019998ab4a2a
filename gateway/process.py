"""One gateway process from start-up to drain: its chat platforms, the runner, the API server
and the cron scheduler (``GatewayProcess.run``, on the event loop ``gateway.serve`` starts).

Order matters: the store and the platforms first; the API server's port is checked before the
warm-up (a busy port says so at once); MCP servers start in the background (agents wait for
them at their first turn); ``READY`` is printed once everything listens; on SIGTERM/SIGINT the
scheduler's runs and the runner's turns drain (still delivering through the adapters), then
the API server and MCP servers stop.
"""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import time
from typing import Any, Callable, Optional

from hermes_core.config import HermesConfig
from hermes_core.home import ensure_private_dir
from gateway.heap import HeapPolicy
from gateway.settings import ServeOptions, api_address, api_enabled, configured_key, drain_timeout
from gateway.status import worker_status_path, write_status

log = logging.getLogger("gateway")
PRESTART_THREADS = 128  # turn threads started at warm-up; more start (off the event loop) as needed
STATUS_INTERVAL = 2.0  # seconds between refreshes of gateway.json (`hermes gateway status`)


def quiet_loop_errors() -> Callable[[asyncio.AbstractEventLoop, dict[str, Any]], None]:
    """The event loop's error handler: each distinct message (e.g. ``socket.accept() out of
    system resource`` while descriptors run out, retried every second) is logged once a minute,
    not with a traceback per retry."""
    last: dict[str, float] = {}

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        message = str(context.get("message") or "event loop error")
        exc = context.get("exception")
        key = f"{message}:{type(exc).__name__}"
        if time.monotonic() - last.get(key, -1e9) < 60:
            return
        last[key] = time.monotonic()
        log.error("%s%s (repeats are not logged for a minute)", message, f": {exc}" if exc else "")

    return handle


class GatewayProcess:
    """What one process serves; ``run()`` returns its exit code (2: nothing to run, 75: turns
    were abandoned after persisting their messages)."""

    def __init__(self, options: ServeOptions, cfg: HermesConfig, turns: Any) -> None:
        self.options, self.cfg, self.gw, self.turns = options, cfg, cfg.gateway, turns
        self.adapters: list[Any] = []
        self.runner: Any = None
        self.api: Any = None
        self.scheduler: Any = None
        self.warm: Optional[dict[str, Any]] = None
        self.heap = HeapPolicy()
        self.started = time.time()
        worker = options.worker
        self.own_status = worker_status_path(worker) if worker is not None else None

    # -- building -------------------------------------------------------------------------------
    def build(self) -> bool:
        """The store, the platforms, the runner and the API server; False: nothing to run."""
        from gateway.access import AccessControl, PairingStore
        from gateway.lease import is_shared
        from gateway.platform_plugins import build_adapters
        from gateway.runner import GatewayRunner, default_agent_factory
        from hermes_state import SessionDB

        db = SessionDB.from_config(self.cfg)
        adapters = build_adapters(self.cfg, self.options.skip_platforms)
        if adapters and is_shared(db):  # other processes share the store: one of them polls
            from gateway.election import ElectedPoller

            adapters = [ElectedPoller(a, db, self.gw.platform(a.name).election_interval)
                        for a in adapters]
        allowed = {a.name: set(self.gw.platform(a.name).allowed_users) for a in adapters}
        allowed["*"] = set(self.gw.allowed_users)
        self.adapters = adapters
        self.runner = GatewayRunner(
            session_db=db, agent_factory=default_agent_factory(self.cfg, db), adapters=adapters,
            access=AccessControl(PairingStore(db=db), config_allowed=allowed),
            busy_policy=self.options.busy_policy or self.gw.busy_policy,
            max_workers=self.turns.threads, turn_limit=self.turns.limit,
            max_cached_agents=self.gw.max_cached_agents, lease_wait=self.gw.turn_lease_wait)
        if api_enabled(self.options, self.gw.api_server):
            self.api = self._api_server()
            self.api.check_port()  # a busy port says so now, not after the warm-up
        if not adapters and self.api is None:
            print("hermes gateway: nothing to run. Enable the API server (API_SERVER_ENABLED=true "
                  "or `--api-server`) or set TELEGRAM_BOT_TOKEN.", file=sys.stderr)
            return False
        return True

    def _api_server(self) -> Any:
        from gateway.platforms.api_server import APIServer

        api = self.gw.api_server
        host, port = api_address(self.options, api)
        worker = self.options.worker is not None
        limits = {k: v for k, v in (("max_body_bytes", api.max_body_bytes),
                                    ("idle_timeout", api.idle_timeout)) if v is not None}
        return APIServer(self.runner, host=host, port=port, key=configured_key(api),
                         allowed_hosts=api.allowed_hosts, cors_origins=api.cors_origins,
                         max_connections=api.max_connections, reuse_port=worker,
                         response_headers={"X-Hermes-Worker": str(os.getpid())} if worker else {},
                         **limits)

    # -- running --------------------------------------------------------------------------------
    async def run(self) -> int:
        if not self.build():
            return 2
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        loop.set_exception_handler(quiet_loop_errors())
        cron_task = await self._start(stop)
        self._status("running")
        self.heap.settle()  # what start-up made is never scanned again (gateway/heap.py)
        address = self._address()
        print(f"READY gateway pid={os.getpid()} platforms={','.join(self._platforms())}"
              + (f" api={address}" if address else ""), flush=True)
        log.info("gateway running (pid %d, platforms: %s)", os.getpid(),
                 ", ".join(self._platforms()))
        try:
            await self._serve_until(stop)
            return await self._drain(cron_task)
        finally:
            self.heap.release()

    async def _start(self, stop: asyncio.Event) -> "asyncio.Future[Any]":
        """MCP servers, the scheduler, the warm-up, then the platforms and the API server."""
        from cron.delivery import registered_sender
        from cron.scheduler import Scheduler
        from gateway.delivery import adapter_sender
        from gateway.health import load_report, register_detailed
        from gateway.warmup import warm_up
        from tools.mcp.manager import start_servers

        runner, loop = self.runner, asyncio.get_running_loop()
        # one set of MCP servers per process, shared by every session; agents wait for them at
        # their first turn (up to connect_timeout), never at start-up; their news goes to the
        # `hermes.mcp` logger, so into gateway.log
        start_servers(self.cfg)
        sender = adapter_sender(runner.adapters, loop, registered_sender(self.cfg))
        self.scheduler = Scheduler(runner.db, self.cfg, sender=sender)
        log.info("turn limit %d (%s), %d turn threads", self.turns.limit, self.turns.source,
                 self.turns.threads)
        if self.gw.warmup:
            warm = await asyncio.to_thread(warm_up, runner.agent_factory, runner.db)
            self.warm = warm.as_dict()
            runner.pool.prestart(PRESTART_THREADS)  # the first burst finds its threads running
        if self.api is not None:
            self.api.add_routes(register_detailed(lambda: {
                **load_report(runner, self.started, self.warm, self.turns.source),
                "gc": self.heap.report(),
                **self._roles()}))
        await runner.start()
        if self.api is not None:
            await self._start_api()
        return asyncio.ensure_future(self.scheduler.serve(stop))

    async def _start_api(self) -> None:
        from agent.tool_policy import run_policy
        from gateway.cron_api import jobs_api
        from gateway.route_plugins import plugin_registrars

        for name, registrar in plugin_registrars(self.cfg):  # e.g. the dashboard
            log.info("API server: mounting %s", name)
            self.api.add_routes(registrar)
        await self.api.add_routes(jobs_api(self.scheduler, run_policy(self.cfg))).start()

    async def _serve_until(self, stop: asyncio.Event) -> None:
        """Refresh the status until a signal (or, for a worker, until its supervisor is gone)."""
        if self.own_status is not None:
            ensure_private_dir(self.own_status.parent)
        parent = os.getppid()
        wait = min(STATUS_INTERVAL, self.scheduler.tick_interval)
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), timeout=wait)
            except asyncio.TimeoutError:
                self._status("running")
                self.heap.tick(busy=self.runner.capacity.accepted > 0)
            if self.own_status is not None and os.getppid() != parent:
                log.warning("the supervisor (pid %d) is gone; draining", parent)
                stop.set()

    async def _drain(self, cron_task: "asyncio.Future[Any]") -> int:
        from tools.mcp.manager import shutdown_servers

        log.info("signal received: draining")
        self._status("draining")
        drain = drain_timeout(self.options, self.gw)
        await cron_task
        await asyncio.to_thread(self.scheduler.shutdown, drain)  # runs still deliver via adapters
        clean = await self.runner.shutdown(drain_timeout=drain)
        if self.api is not None:
            await self.api.stop()
        await asyncio.to_thread(shutdown_servers)
        self._status("stopped")
        log.info("gateway stopped (%s)",
                 "clean" if clean else "turns abandoned after persisting their messages")
        return 0 if clean else 75

    # -- reporting ------------------------------------------------------------------------------
    def _platforms(self) -> list[str]:
        return [a.name for a in self.adapters] + (["api_server"] if self.api else [])

    def _address(self) -> Optional[str]:
        return f"http://{self.api.host}:{self.api.port}" if self.api else None

    def _roles(self) -> dict[str, Any]:
        """Which worker this is and whether it polls (``--workers``; the election)."""
        out: dict[str, Any] = {} if self.options.worker is None else {"worker": self.options.worker}
        out.update({a.name: a.role for a in self.adapters if hasattr(a, "role")})
        return out

    def _status(self, state: str) -> None:
        runner = self.runner
        try:  # a report: whatever goes wrong gathering it never stops the gateway
            write_status(self.own_status, state=state, started_at=self.started,
                         platforms=self._platforms(), api_server=self._address(),
                         turns_completed=runner.turns_completed, cron=self.scheduler.status(),
                         turns=runner.capacity.snapshot(), **self._roles(),
                         platform_status=runner.platforms.snapshot(), **runner.session_counts())
        except Exception as exc:  # noqa: BLE001
            log.warning("could not gather the gateway status: %s", exc)
