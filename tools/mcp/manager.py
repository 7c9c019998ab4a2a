"""The one MCP connection manager of a process: a background asyncio loop owning every session.

Surfaces call `start_servers(cfg)` once (the REPL, `-z`, the gateway; idempotent): all enabled
servers connect in parallel on a daemon thread, so the caller never waits for them. Their tools
enter the registry as they connect. Agents fix their tool list at the first turn of a session
(`tools.registry.settle`): a server still connecting then gets until its `connect_timeout`, a
failed one is reported once and left out. Calls come from tool threads and hop onto the loop;
every wait is bounded (`timeout` per call, `connect_timeout` per connect), so a hung server can
cost a call its timeout but never hangs the agent. `shutdown()` (also at exit) closes the
sessions; children that outlive even that die with the process (see `launcher.py`).
"""
from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
import time
from concurrent.futures import CancelledError
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from tools.mcp.config import ServerConfig, display_url, parse_servers
from tools.mcp.connection import CallFailed, Connection, Unavailable, describe
from tools.mcp.tools import plan_tools, register_server_tools, toolset_name
from hermes_core.redact import redact
from tools import registry
from tools.registry import ToolContext, ToolError

log = logging.getLogger("hermes.mcp")
# reported through `report`; a host's logging config still gets them
log.addHandler(logging.NullHandler())
Reporter = Callable[[str, str], None]  # (kind: "info" | "warning" | "error", one line)


@dataclass
class ServerStatus:
    """What `hermes mcp list` and `/mcp` show for one server."""

    name: str
    transport: str
    target: str  # the command line or the URL
    status: str  # connecting, connected, reconnecting, failed, disabled, stopped
    error: Optional[str]
    tools: list[str]  # registry names
    descriptions: dict[str, str]
    retry_in: Optional[float]


class MCPManager:
    """Every configured server of this process, connected in the background."""

    def __init__(self, servers: list[ServerConfig], *, log_dir: Path,
                 environ: Optional[Mapping[str, str]] = None, report: Optional[Reporter] = None,
                 register_tools: bool = True) -> None:
        self._environ = dict(os.environ if environ is None else environ)
        self._report = report
        self._register = register_tools
        self._log_dir = log_dir
        self._registered: dict[str, dict[str, str]] = {}  # server -> {registry name: tool name}
        self._reported: dict[str, set[str]] = {}  # server -> problem lines already shown
        self.connections: dict[str, Connection] = {
            s.name: Connection(s, log_path=log_dir / "mcp" / f"{_file_name(s.name)}.log",
                               environ=self._environ,
                               on_tools=self._tools_listed, on_event=self._event)
            for s in servers}
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._tasks: list[asyncio.Future] = []
        self._closed = False

    # ---- life -----------------------------------------------------------------------------------
    def start(self) -> "MCPManager":
        """Connect every enabled server in the background; returns at once."""
        if self._thread is not None or not any(c.cfg.enabled for c in self.connections.values()):
            return self
        _route_sdk_logs(self._log_dir)
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run_loop, args=(ready,), name="hermes-mcp",
                                        daemon=True)
        self._thread.start()
        ready.wait()
        for conn in self.connections.values():
            if conn.cfg.enabled:
                conn.started = time.monotonic()
                self._tasks.append(asyncio.run_coroutine_threadsafe(conn.run(), self._loop))
        if self._register:
            for conn in self.connections.values():
                if conn.cfg.enabled:  # naming it in -t or `toolsets:` is valid before it connects
                    registry.register_toolset(toolset_name(conn.name),
                                              f"tools of MCP server {conn.name}")
            registry.add_settle_hook(self.wait_settled)
        return self

    def _run_loop(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    def wait_settled(self, notify: Optional[Callable[[str], None]] = None,
                     cancel: Optional[threading.Event] = None,
                     timeout: Optional[float] = None) -> list[str]:
        """Wait until every enabled server has connected or failed, each at most until its own
        `connect_timeout` from start; the names still connecting afterwards."""
        told = False
        stop_at = time.monotonic() + timeout if timeout is not None else float("inf")
        while True:
            pending = [c for c in self.connections.values()
                       if c.cfg.enabled and not c.settled.is_set()]
            now = time.monotonic()
            pending = [c for c in pending if now < min(stop_at, _connect_deadline(c))]
            if not pending or (cancel is not None and cancel.is_set()):
                return [c.name for c in pending]
            if notify is not None and not told:
                told = True
                left = max(min(stop_at, _connect_deadline(c), now + c.cfg.connect_timeout)
                           for c in pending) - now
                notify(f"Waiting for MCP server{'s' if len(pending) > 1 else ''} "
                       f"{', '.join(c.name for c in pending)} to connect (up to {left:.0f} s)…")
            pending[0].settled.wait(0.05)

    def shutdown(self, timeout: float = 5.0) -> None:
        """Close every session (children exit), then stop the loop; bounded by `timeout`."""
        if self._closed:
            return
        self._closed = True
        registry.remove_settle_hook(self.wait_settled)
        if self._register:
            for server, names in self._registered.items():
                for name in names:
                    registry.unregister(name)
            for server in self.connections:
                registry.unregister_toolset(toolset_name(server))
        loop = self._loop
        if loop is None or not loop.is_running():
            return
        for conn in self.connections.values():
            loop.call_soon_threadsafe(conn.stop)
        deadline = time.monotonic() + timeout
        for task in self._tasks:
            try:
                task.result(max(0.0, deadline - time.monotonic()))
            except Exception:  # noqa: BLE001 - a server that will not close in time is abandoned
                pass
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(max(0.1, deadline - time.monotonic()))

    # ---- calls (from tool threads) --------------------------------------------------------------
    def call(self, server: str, tool: str, args: dict, *, timeout: Optional[float] = None,
             interrupt: Optional[threading.Event] = None) -> dict:
        """Run a tool on a server; the CallToolResult as a dict. Failures are ToolErrors that say
        what happened and what to do (the model reads them)."""
        conn = self.connections.get(server)
        if conn is None or self._loop is None or self._closed:
            raise ToolError(f"MCP server {server} is not running in this process")
        limit = conn.cfg.timeout if timeout is None else timeout
        future = asyncio.run_coroutine_threadsafe(conn.call(tool, args, limit), self._loop)
        # the SDK's own timeout fires first; this is a backstop
        deadline = time.monotonic() + limit + 5.0
        while True:
            try:
                return future.result(0.1)
            except FutureTimeout:
                if interrupt is not None and interrupt.is_set():
                    future.cancel()
                    raise ToolError(f"the call to {server} was interrupted") from None
                if time.monotonic() > deadline or self._closed:
                    future.cancel()
                    why = ("Hermes is shutting down" if self._closed
                           else f"no answer within {limit:g} s")
                    raise ToolError(f"the call to MCP server {server} ended: {why}") from None
            except CancelledError:
                raise ToolError(f"the call to MCP server {server} was cancelled "
                                "(Hermes is shutting down)") from None
            except (Unavailable, CallFailed) as exc:
                raise ToolError(str(exc)) from None
            except Exception as exc:  # noqa: BLE001 - any SDK error: one line for the model
                raise ToolError(f"MCP server {server}: {describe(exc)}") from None

    # ---- status ---------------------------------------------------------------------------------
    def statuses(self) -> list[ServerStatus]:
        out = []
        now = time.monotonic()
        for conn in self.connections.values():
            cfg = conn.cfg
            target = (" ".join([cfg.command or "", *cfg.args]).strip() if cfg.transport == "stdio"
                      else display_url(cfg.url or ""))
            names = self._registered.get(conn.name, {})
            by_raw = {str(t.get("name")): str(t.get("description") or "") for t in conn.tools}
            retry = (conn.next_retry - now
                     if conn.next_retry and conn.status in ("failed", "reconnecting") else None)
            out.append(ServerStatus(conn.name, cfg.transport, self._redact(conn.name, target),
                                    conn.status,
                                    self._redact(conn.name, conn.error) if conn.error else None,
                                    sorted(names),
                                    {n: by_raw.get(raw, "") for n, raw in names.items()},
                                    max(0.0, retry) if retry is not None else None))
        return out

    # ---- callbacks from the loop thread --------------------------------------------------------
    def _event(self, kind: str, message: str) -> None:
        message = self._redact_all(message)
        (log.warning if kind != "info" else log.info)("%s", message)
        if self._report is not None:
            try:
                self._report(kind, message)
            except Exception:  # noqa: BLE001
                log.exception("MCP status reporter failed")

    def _tools_listed(self, conn: Connection) -> None:
        first = conn.name not in self._registered
        if self._register:
            reg = register_server_tools(
                conn.name, conn.tools, conn.cfg.include, conn.cfg.exclude,
                call=lambda tool, args, ctx, name=conn.name: self._call_from_registry(
                    name, tool, args, ctx),
                previous=self._registered.get(conn.name, {}),
                redact=lambda text, name=conn.name: self._redact(name, text))
            self._registered[conn.name] = reg.names
            seen = self._reported.setdefault(conn.name, set())
            for line in reg.problems:
                if line not in seen:  # once per process, not at every reconnect
                    seen.add(line)
                    self._event("warning", line)
        else:  # `hermes mcp list/test`: the names the agent would see, nothing registered
            chosen, _ = plan_tools(conn.name, conn.tools, conn.cfg.include, conn.cfg.exclude,
                                   lambda n: False)
            self._registered[conn.name] = {name: tool["name"] for name, tool in chosen}
        n = len(self._registered[conn.name])
        self._event("info", f"MCP server {conn.name} {'connected' if first else 'reconnected'} "
                            f"({n} tool{'s' if n != 1 else ''}, toolset {toolset_name(conn.name)})")

    def _call_from_registry(self, server: str, tool: str, args: dict, ctx: ToolContext) -> dict:
        return self.call(server, tool, args, interrupt=ctx.interrupt_event)

    def _redact(self, server: str, text: str) -> str:
        conn = self.connections.get(server)
        return redact(text, conn.cfg.secrets()) if conn else text

    def _redact_all(self, text: str) -> str:
        for name in self.connections:
            text = self._redact(name, text)
        return text


def _connect_deadline(conn: Connection) -> float:
    """Until when a server's first connect may keep an agent waiting (the SDK import before it
    does not count: it is bounded and shared by all servers)."""
    begun = conn.attempt_started
    return float("inf") if begun is None else begun + conn.cfg.connect_timeout + 0.5


def _file_name(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "server"


def _route_sdk_logs(log_dir: Path) -> None:
    """The SDK logs protocol noise (a junk stdout line comes with a traceback): into a file, never
    onto the user's terminal."""
    for name in ("mcp", "client", "httpx2"):
        logger = logging.getLogger(name)
        if getattr(logger, "_hermes_routed", False):
            continue
        logger.propagate = False
        try:
            from hermes_core.home import create_private_file, ensure_private_dir

            ensure_private_dir(log_dir / "mcp")
            path = create_private_file(log_dir / "mcp" / "sdk.log")
            handler: logging.Handler = logging.FileHandler(path, encoding="utf-8")
            handler.setFormatter(
                logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        except OSError:
            handler = logging.NullHandler()
        logger.addHandler(handler)
        logger._hermes_routed = True  # type: ignore[attr-defined]


# ---- the process-wide manager ----------------------------------------------------------------
_manager: Optional[MCPManager] = None
_manager_lock = threading.Lock()


def start_servers(cfg: Any, *, report: Optional[Reporter] = None,
                  environ: Optional[Mapping[str, str]] = None) -> Optional[MCPManager]:
    """Start this process's MCP servers from `cfg.mcp_servers` (once; later calls return the
    same manager). Bad entries are reported through `report` and skipped. None when none is
    configured."""
    global _manager
    with _manager_lock:
        if _manager is not None:
            return _manager
        from hermes_core.config import hermes_home

        env = dict(os.environ if environ is None else environ)
        servers, errors = parse_servers(getattr(cfg, "mcp_servers", None), env)
        for line in errors:
            log.warning("%s", line)
            if report is not None:
                report("error", line + "; this server is skipped")
        if not servers:
            return None
        _manager = MCPManager(servers, log_dir=hermes_home() / "logs", environ=env,
                              report=report).start()
        atexit.register(shutdown_servers)
        return _manager


def get_manager() -> Optional[MCPManager]:
    return _manager


def shutdown_servers(timeout: float = 5.0) -> None:
    """Close the process's MCP sessions (REPL exit, end of `-z`, gateway drain); idempotent."""
    global _manager
    with _manager_lock:
        manager, _manager = _manager, None
    if manager is not None:
        manager.shutdown(timeout)
