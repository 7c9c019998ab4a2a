"""A scriptable MCP server for the tests and the benchmark, written on the SDK's `MCPServer`.

    python tests/mcp/server.py [--http PORT] [--startup-delay S] [--hang-startup] [--junk-stdout]
                               [--bad-schema] [--colliding-names] [--name NAME]

Over stdio by default; `--http PORT` serves streamable HTTP on 127.0.0.1:PORT/mcp (port 0 picks
one) and prints `READY <url>` on stderr. Its tools cover the client's paths: plain text (`echo`,
`add`), structured content (`weather`), a tool error (`fail`), a call that hangs (`sleep`), a
server that dies mid-call (`crash`), and what reaches the child's environment (`env_names`).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
import time
from typing import Any


def build(args: argparse.Namespace):  # noqa: ANN201 - the SDK's type
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import Tool

    class ScriptedServer(MCPServer):
        async def list_tools(self) -> list[Tool]:
            tools = await super().list_tools()
            if args.bad_schema:
                tools.append(Tool(name="bad_schema", description="a tool whose schema is broken",
                                  input_schema={"type": "object", "properties": {"x": {"type": "strng"}},
                                                "required": "x"}))
            return tools

    server = ScriptedServer(args.name, version="1.0", log_level="WARNING")

    @server.tool(description="Echo the text back.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> str:
        return str(a + b)

    @server.tool(description="Weather for a city (structured).", structured_output=True)
    def weather(city: str) -> dict[str, Any]:
        return {"city": city, "temp_c": 21, "sky": "clear"}

    @server.tool(description="Always fails.")
    def fail(message: str = "it broke") -> str:
        raise ToolError(message)

    @server.tool(description="Sleep for a number of seconds, then answer.")
    async def sleep(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool(description="Kill this server process.")
    def crash() -> str:
        os._exit(3)

    @server.tool(description="Names of the environment variables this server sees.")
    def env_names() -> str:
        return " ".join(sorted(os.environ))

    @server.tool(description="This server's process id.")
    def pid() -> str:
        return str(os.getpid())

    if args.colliding_names:
        server.add_tool(lambda: "dotted", name="get.item", description="dotted name")
        server.add_tool(lambda: "underscored", name="get_item", description="underscored name")
    return server


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--name", default="scripted")
    p.add_argument("--http", type=int, metavar="PORT")
    p.add_argument("--startup-delay", type=float, default=0.0)
    p.add_argument("--hang-startup", action="store_true")
    p.add_argument("--junk-stdout", action="store_true")
    p.add_argument("--only-junk", action="store_true", help="print junk and never speak MCP")
    p.add_argument("--bad-schema", action="store_true")
    p.add_argument("--colliding-names", action="store_true")
    p.add_argument("--spawn-child", action="store_true", help="start a grandchild that sleeps")
    args = p.parse_args()
    if args.spawn_child:
        import subprocess

        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        sys.stderr.write(f"GRANDCHILD {child.pid}\n")
        sys.stderr.flush()
    if args.hang_startup:
        time.sleep(3600)
    if args.only_junk:
        while True:
            print("this is not JSON-RPC", flush=True)
            time.sleep(0.2)
    if args.startup_delay:
        time.sleep(args.startup_delay)
    if args.junk_stdout:
        print("hello from a server that logs to stdout", flush=True)
    server = build(args)
    if args.http is None:
        server.run("stdio")
        return
    port = args.http
    if port == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    sys.stderr.write(f"READY http://127.0.0.1:{port}/mcp\n")
    sys.stderr.flush()
    server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
