"""One MCP server: connect, list tools, stay connected, run calls (async, in the manager's loop).

`Connection.run()` is the server's whole life: connect within `connect_timeout`, hand the tool
list over, then wait until the connection drops (the stdio pipe reaches EOF or a call finds it
closed) and reconnect with jittered backoff, until `stop()`. A server that cannot work at all
(its command does not exist) is not retried. The SDK (`mcp`) is imported here, in the manager's
thread, never on the path to the first prompt.
"""
from __future__ import annotations

import asyncio
import math
import os
import re
import shutil
import sys
import threading
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from tools.mcp.config import ServerConfig, child_env, display_url
from tools.mcp.transport import is_transport_error, streamable_http, watched
from hermes_core.retry import jittered_backoff

LAUNCHER = str(Path(__file__).with_name("launcher.py"))
MAX_TOOL_PAGES = 100
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


class Unavailable(Exception):
    """The server cannot take a call now (starting, reconnecting, failed); the message says so."""


class CallFailed(Exception):
    """A call reached the server and failed there (timeout, unknown tool, bad arguments)."""


class _Permanent(Exception):
    """Retrying cannot help (the command does not exist)."""


def resolve_command(command: str, path: Optional[str], cwd: Optional[str]) -> str:
    """The executable a stdio server runs; a clear _Permanent error when there is none."""
    if os.sep in command:
        p = Path(command).expanduser()
        if not p.is_absolute() and cwd:
            p = Path(cwd).expanduser() / p
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
        raise _Permanent(f"command {command!r} does not exist or is not executable")
    found = shutil.which(command, path=path)
    if not found:
        raise _Permanent(f"command {command!r} was not found on PATH; "
                         "install it or give its full path")
    return found


def describe(exc: BaseException) -> str:
    """One line for an exception, looking inside the task groups the SDK raises."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split())
    if isinstance(exc, TimeoutError) and not text:
        return "timed out"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Connection:
    """A configured server and its live session; status fields are read from other threads."""

    def __init__(self, cfg: ServerConfig, *, log_path: Path, environ: Mapping[str, str],
                 on_tools: Callable[["Connection"], None],
                 on_event: Callable[[str, str], None]) -> None:
        self.cfg = cfg
        self.name = cfg.name
        self.status = "connecting" if cfg.enabled else "disabled"
        self.error: Optional[str] = None
        self.tools: list[dict] = []  # as listed by the server (JSON dicts)
        self.settled = threading.Event()  # the first attempt is over, either way
        self.started = time.monotonic()
        # when the current connect began (SDK imported)
        self.attempt_started: Optional[float] = None
        self.next_retry: Optional[float] = None
        self._log_path = log_path
        self._environ = environ
        self._on_tools = on_tools
        self._on_event = on_event
        self._client: Any = None
        self._scope: Any = None  # the cancel scope of the current attempt
        self._wake: Optional[asyncio.Event] = None
        self._stopping = False
        self._lost: Optional[str] = None
        self._junk: list[str] = []  # stdout lines that were not MCP messages

    # ---- life ---------------------------------------------------------------------------------
    async def run(self) -> None:
        self._wake = asyncio.Event()
        self.started = time.monotonic()
        failures = 0
        while not self._stopping:
            self.next_retry = None
            try:
                await self._connect_and_serve()
                failures = 1  # it was up and dropped: reconnect soon
            except _Permanent as exc:
                self._failed(str(exc), retrying=False)
                return
            except Exception as exc:  # noqa: BLE001 - any connect failure: reported, then retried
                failures += 1
                self._failed(str(exc) if isinstance(exc, ConnectionError) else describe(exc),
                             retrying=True)
            if self._stopping:
                break
            delay = jittered_backoff(failures, base=1.0, cap=30.0)
            self.next_retry = time.monotonic() + delay
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=delay)
            except asyncio.TimeoutError:
                pass
        self.status = "stopped" if self.status != "disabled" else self.status

    def stop(self) -> None:
        """Ask run() to close the session and return (call in the loop's thread)."""
        self._stopping = True
        if self._scope is not None and self._client is None:
            self._scope.cancel()  # still connecting: do not wait out connect_timeout
        if self._wake is not None:
            self._wake.set()

    def drop(self, reason: str) -> None:
        """The connection is gone (found by a call or by EOF): reconnect (loop's thread)."""
        if self._client is not None and self._lost is None:
            self._lost = reason
            self._client = None
            if not self._stopping:
                self.status, self.error = "reconnecting", reason
            if self._wake is not None:
                self._wake.set()

    async def _connect_and_serve(self) -> None:
        self._lost, self._junk = None, []
        if self.cfg.transport == "stdio":  # before the SDK import: a missing command fails at once
            resolve_command(self.cfg.command or "", child_env(self.cfg, self._environ).get("PATH"),
                            self.cfg.cwd)
        import anyio
        from mcp import Client
        from mcp.types import Implementation

        self._wake.clear()
        log_start = self._log_size()
        self.attempt_started = time.monotonic()
        connected = False
        # One cancel scope spans the session's whole life (anyio wants scopes nested in the order
        # they were entered); its deadline bounds only the connect, and is lifted once connected.
        with anyio.CancelScope(deadline=anyio.current_time() + self.cfg.connect_timeout) as scope:
            self._scope = scope
            try:
                async with AsyncExitStack() as stack:
                    transport = watched(self._transport(stack),
                                         lambda: self.drop("the server closed the connection"))
                    client = await stack.enter_async_context(Client(
                        transport, message_handler=self._on_message,
                        client_info=Implementation(name="hermes", version="0.1")))
                    listed = await self._list_tools(client)
                    scope.deadline = math.inf
                    connected = True
                    self._client, self.tools = client, listed
                    self.status, self.error = "connected", None
                    self._on_tools(self)
                    self.settled.set()
                    if self._lost is None and not self._stopping:
                        await self._wake.wait()
                    self._client = None
            except _Permanent:
                raise
            except Exception as exc:  # noqa: BLE001 - teardown after a drop, or a failed connect
                if connected:
                    self._lost = self._lost or describe(exc)
                else:
                    raise ConnectionError(self._why(exc, log_start)) from None
        self._client, self._scope = None, None
        if not connected:
            if self._stopping:
                return
            raise ConnectionError(self._why(TimeoutError(), log_start))
        if not self._stopping:
            self.status, self.error = "reconnecting", self._lost or "the connection dropped"
            self._on_event("warning",
                           f"MCP server {self.name} disconnected ({self.error}); reconnecting")

    def _transport(self, stack: AsyncExitStack) -> Any:
        cfg = self.cfg
        if cfg.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            env = child_env(cfg, self._environ)
            exe = resolve_command(cfg.command or "", env.get("PATH"), cfg.cwd)
            from hermes_core.home import create_private_file, ensure_private_dir

            # logs are private like the rest of HERMES_HOME
            ensure_private_dir(self._log_path.parent)
            create_private_file(self._log_path)
            errlog = stack.enter_context(open(self._log_path, "a", encoding="utf-8",
                                              errors="replace"))
            params = StdioServerParameters(
                command=sys.executable,
                args=["-I", "-S", LAUNCHER, str(os.getpid()), exe, *cfg.args],
                env=env, cwd=str(Path(cfg.cwd).expanduser()) if cfg.cwd else None)
            return stdio_client(params, errlog=errlog)
        if cfg.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(cfg.url or "", headers=cfg.headers, timeout=cfg.connect_timeout,
                              sse_read_timeout=max(300.0, cfg.timeout))
        return streamable_http(cfg)

    async def _list_tools(self, client: Any) -> list[dict]:
        tools: list[dict] = []
        cursor = None
        for _ in range(MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(t.model_dump(mode="json", by_alias=True, exclude_none=True)
                         for t in page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            errors = getattr(message, "errors", None)
            line = errors()[0].get("input") if callable(errors) and errors() else str(message)
            if len(self._junk) < 5:
                self._junk.append(str(line)[:100])
            return
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification) and self._client is not None:
            asyncio.get_running_loop().create_task(self._relist())

    async def _relist(self) -> None:
        client = self._client
        try:
            self.tools = await self._list_tools(client)
        except Exception as exc:  # noqa: BLE001
            self._on_event("warning", f"MCP server {self.name}: "
                                      f"could not refresh its tools ({describe(exc)})")
            return
        if client is self._client:
            self._on_tools(self)

    # ---- calls --------------------------------------------------------------------------------
    async def call(self, tool: str, args: dict, timeout: float) -> dict:
        """The CallToolResult as a JSON dict; Unavailable/CallFailed carry a line for the model."""
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        client = self._client
        if client is None:
            raise Unavailable(self.unavailable_message())
        try:
            result = await client.call_tool(tool, args, read_timeout_seconds=timeout)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self.drop("the connection closed during a call")
                raise Unavailable(self.unavailable_message()) from None
            if exc.code == REQUEST_TIMEOUT:
                raise CallFailed(f"no answer from MCP server {self.name} within {timeout:g} s "
                                 f"(mcp_servers.{self.name}.timeout)") from None
            raise CallFailed(f"MCP server {self.name} refused the call: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - transport broke (HTTP server gone, pipe closed)
            if is_transport_error(exc):
                self.drop(describe(exc))
                raise Unavailable(self.unavailable_message()) from None
            raise CallFailed(f"MCP server {self.name}: {describe(exc)}") from None
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)

    def unavailable_message(self) -> str:
        why = self._lost or self.error or self.status
        return (f"MCP server {self.name} is unavailable ({why}): "
                "server unavailable, retrying in the background; "
                "try the call again in a few seconds")

    # ---- reporting ------------------------------------------------------------------------------
    def _failed(self, message: str, retrying: bool) -> None:
        first = not self.settled.is_set() and self.status != "reconnecting"
        self.error = message
        if first:
            self.status = "failed"
            self._on_event("error", f"MCP server {self.name} failed to start: {message}")
        self.settled.set()

    def _log_size(self) -> int:
        try:
            return self._log_path.stat().st_size
        except OSError:
            return 0

    def _why(self, exc: BaseException, log_start: int) -> str:
        """Why connecting failed, with the clue a user needs (the server's last words on stderr)."""
        if isinstance(exc, TimeoutError):
            text = (f"no MCP handshake within {self.cfg.connect_timeout:g} s "
                    f"(mcp_servers.{self.name}.connect_timeout)")
        elif self.cfg.transport != "stdio":
            text = f"cannot reach {display_url(self.cfg.url or '')} ({describe(exc)})"
        else:
            text = describe(exc)
        if self._junk:
            text += (f"; its stdout had non-MCP output such as {self._junk[0]!r} "
                     "(a stdio server must log to stderr)")
        tail = self._stderr_tail(log_start)
        if tail:
            text += f"; its last words on stderr: {tail!r}"
        return text

    def _stderr_tail(self, start: int) -> str:
        if self.cfg.transport != "stdio":
            return ""
        try:
            with open(self._log_path, "rb") as f:
                f.seek(start)
                data = f.read()[-4000:].decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [_ANSI.sub("", ln).strip(" │╭╮╰╯─") for ln in data.splitlines()]
        lines = [ln for ln in lines if ln]
        return lines[-1][:200] if lines else ""
