"""`hermes mcp add|list|remove|test`: manage the MCP servers in config.yaml (SPEC §14).

`add` and `remove` edit `mcp_servers` and leave values exactly as typed (a `${TOKEN}` stays a
reference; a literal secret stays where the user put it). `list` and `test` connect for real
(in parallel, each bounded by its `connect_timeout`) and show what the agent would get; secret
values are never printed.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Optional

from hermes_core.config import ConfigError, config_path, read_raw_config

STATUS_MARK = {"connected": "✓", "failed": "✗", "invalid": "✗", "disabled": "-",
               "connecting": "…",
               "reconnecting": "…", "stopped": "-"}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("mcp", help="add, list, test or remove MCP servers "
                                   "(their tools become agent tools)")
    acts = p.add_subparsers(dest="mcp_action", metavar="ACTION")
    a = acts.add_parser("add", help="add a server to config.yaml",
                        description="Add an MCP server: a program over stdio (--command) "
                                    "or an HTTP URL.",
                        epilog="Example: hermes mcp add time --command uvx --args mcp-server-time")
    a.add_argument("name", metavar="NAME")
    how = a.add_mutually_exclusive_group(required=True)
    how.add_argument("--command", dest="server_command", metavar="CMD",
                     help="program that speaks MCP on stdin/stdout")
    how.add_argument("--url", metavar="URL",
                     help="streamable HTTP endpoint (or SSE with --transport sse)")
    a.add_argument("--env", action="append", default=[], metavar="K=V",
                   help="variable for the program (repeat)")
    a.add_argument("--header", action="append", default=[], metavar="K=V",
                   help="HTTP header (repeat)")
    a.add_argument("--transport", choices=["http", "sse"], help="for --url: http (default) or sse")
    a.add_argument("--timeout", type=float, metavar="S", help="seconds per tool call (default 120)")
    a.add_argument("--connect-timeout", type=float, metavar="S",
                   help="seconds to connect (default 30)")
    a.add_argument("--disabled", action="store_true", help="add it switched off")
    a.add_argument("--force", action="store_true", help="replace a server of the same name")
    a.add_argument("--args", dest="server_args", nargs=argparse.REMAINDER, default=[],
                   metavar="ARG",
                   help="arguments for the program; everything after --args (so put it last)")
    ls = acts.add_parser("list", help="each server's status and tool count (connects to find out)")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.add_argument("--no-connect", action="store_true", help="show the configuration only")
    t = acts.add_parser("test", help="connect to one server and list its tools")
    t.add_argument("name", metavar="NAME")
    r = acts.add_parser("remove", help="remove a server from config.yaml")
    r.add_argument("name", metavar="NAME")
    sv = acts.add_parser("serve",
                         help="be an MCP server on stdio (for Claude Desktop, Cursor, ...)")
    a.set_defaults(func=cmd_add)
    ls.set_defaults(func=lambda args: cmd_list(json_out=args.json, connect=not args.no_connect))
    t.set_defaults(func=lambda args: cmd_test(args.name))
    r.set_defaults(func=lambda args: cmd_remove(args.name))
    sv.set_defaults(func=_serve)
    p.set_defaults(func=_usage)


def _usage(_args: Any) -> int:
    """Bare ``hermes mcp``: the actions, exit 2."""
    sys.stderr.write("usage: hermes mcp {add,list,test,remove,serve} (see `hermes mcp --help`)\n")
    return 2


def _serve(args: Any) -> int:
    from hermes_cli import mcp_serve_cmd

    return mcp_serve_cmd.run(args)


# ---- config.yaml ----------------------------------------------------------------------------
def _servers_section(raw: dict) -> dict:
    section = raw.get("mcp_servers")
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ConfigError(f"{config_path()}: `mcp_servers` must be a mapping of name -> "
                          "settings; fix it by hand")
    return section


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{what} {item!r} must look like NAME=VALUE")
        out[key.strip()] = value
    return out


def entry_from_args(args: Any) -> dict:
    """The config.yaml entry for `hermes mcp add` flags (values exactly as typed)."""
    entry: dict[str, Any] = {}
    if args.server_command:
        if args.header or args.transport:
            raise ValueError("--header and --transport are for --url servers")
        entry["command"] = args.server_command
        if args.server_args:
            entry["args"] = list(args.server_args)
        if args.env:
            entry["env"] = _pairs(args.env, "--env")
    else:
        if args.server_args or args.env:
            raise ValueError("--args and --env are for --command servers")
        entry["url"] = args.url
        if args.transport == "sse":
            entry["transport"] = "sse"
        if args.header:
            entry["headers"] = _pairs(args.header, "--header")
    if args.timeout is not None:
        entry["timeout"] = args.timeout
    if args.connect_timeout is not None:
        entry["connect_timeout"] = args.connect_timeout
    if args.disabled:
        entry["enabled"] = False
    return entry


def cmd_add(args: Any) -> int:
    from tools.mcp.config import MCPConfigError, parse_server
    from hermes_cli.config_cmd import write_config

    name = args.name.strip()
    if not name:
        raise ValueError("the server needs a name")
    entry = entry_from_args(args)
    try:  # the shape must be right now; ${VARS} may be set later, so any value will do here
        parse_server(name, entry, _AnyEnv())
    except MCPConfigError as exc:
        raise ValueError(str(exc)) from None
    raw = read_raw_config()
    servers = _servers_section(raw)
    if name in servers and not args.force:
        raise ValueError(f"an MCP server named {name!r} already exists; `hermes mcp remove {name}` "
                         "first, or add --force to replace it")
    servers[name] = entry
    raw["mcp_servers"] = servers
    path = write_config(raw)
    from tools.mcp.config import display_url

    kind = (f"stdio: {' '.join([args.server_command, *args.server_args])}" if args.server_command
            else f"{args.transport or 'http'}: {display_url(args.url)}")
    print(f"Added MCP server {name} ({kind}) to {path}.")
    print(f"Check it with `hermes mcp test {name}`; "
          f"its tools reach the agent as mcp__{name}__<tool>.")
    return 0


def cmd_remove(name: str) -> int:
    from hermes_cli.config_cmd import write_config

    raw = read_raw_config()
    servers = _servers_section(raw)
    if name not in servers:
        known = ", ".join(sorted(servers)) or "none"
        raise ValueError(f"no MCP server named {name!r} (configured: {known})")
    del servers[name]
    if servers:
        raw["mcp_servers"] = servers
    else:
        raw.pop("mcp_servers", None)
    write_config(raw)
    print(f"Removed MCP server {name}.")
    return 0


class _AnyEnv(dict):
    """An environment in which every ${VAR} is set (to check an entry's shape only)."""

    def __contains__(self, key: object) -> bool:
        return True

    def __missing__(self, key: str) -> str:
        return "x"


# ---- connecting -----------------------------------------------------------------------------
def _connect(servers: list, force: bool = False) -> Any:
    """A manager for these servers that registers nothing; waits until each connected or failed."""
    from dataclasses import replace

    from hermes_core.config import hermes_home
    from tools.mcp.manager import MCPManager

    def warn(kind: str, line: str) -> None:
        if kind == "warning":  # tools left out; a failure to connect is shown once by the caller
            sys.stderr.write(f"⚠ {line}\n")

    if force:
        servers = [replace(s, enabled=True) for s in servers]
    manager = MCPManager(servers, log_dir=hermes_home() / "logs", report=warn,
                         register_tools=False).start()
    manager.wait_settled()
    return manager


def _load_entries() -> tuple[list, dict[str, str], dict[str, Any]]:
    from tools.mcp.config import MCPConfigError, parse_server

    section = _servers_section(read_raw_config())
    servers, invalid = [], {}
    for name, entry in section.items():
        try:
            servers.append(parse_server(str(name), entry, os.environ))
        except MCPConfigError as exc:
            invalid[str(name)] = str(exc)
    return servers, invalid, section


def cmd_list(json_out: bool = False, connect: bool = True) -> int:
    from tools.mcp.manager import MCPManager

    servers, invalid, _ = _load_entries()
    if connect and any(s.enabled for s in servers):
        manager = _connect(servers)
    else:
        manager = MCPManager(servers, log_dir=config_path().parent / "logs", register_tools=False)
    try:
        rows = [_row(st, connected=connect) for st in manager.statuses()]
    finally:
        manager.shutdown()
    rows += [{"name": n, "transport": None, "target": None, "status": "invalid", "error": e,
              "tools": 0,
              "tool_names": []} for n, e in invalid.items()]
    if json_out:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("No MCP servers configured. "
              "Add one: hermes mcp add NAME --command CMD [--args ...] | --url URL")
        return 0
    for line in status_lines(rows):
        print(line)
    return 0


def _row(st: Any, connected: bool) -> dict:
    status = st.status if connected or st.status == "disabled" else "configured"
    return {"name": st.name, "transport": st.transport, "target": st.target, "status": status,
            "error": st.error, "tools": len(st.tools), "tool_names": st.tools}


def status_lines(rows: list[dict]) -> list[str]:
    """Aligned lines for `hermes mcp list` and `/mcp` (pure)."""
    width = max(len(r["name"]) for r in rows)
    out = []
    for r in rows:
        mark = STATUS_MARK.get(r["status"], " ")
        tools = (f"{r['tools']} tool{'s' if r['tools'] != 1 else ''}"
                 if r["status"] == "connected" else "")
        head = f"{mark} {r['name'].ljust(width)}  {r['status']:<12} {tools:<9}"
        where = f"  {r['transport']}: {r['target']}" if r.get("target") else ""
        out.append((head + where).rstrip())
        if r.get("error"):
            out.append(f"  {' ' * width}  {r['error']}")
    return out


def cmd_test(name: str) -> int:
    from tools.mcp.config import MCPConfigError, display_url, parse_server

    section = _servers_section(read_raw_config())
    if name not in section:
        known = ", ".join(sorted(map(str, section))) or "none"
        raise ValueError(f"no MCP server named {name!r} (configured: {known}); "
                         "add it with `hermes mcp add`")
    try:
        server = parse_server(name, section[name], os.environ)
    except MCPConfigError as exc:
        sys.stderr.write(f"hermes: error: {exc}\n")
        return 2
    from hermes_core.redact import redact

    target = redact(" ".join([server.command or "", *server.args]) if server.transport == "stdio"
                    else display_url(server.url or ""), server.secrets())
    print(f"Connecting to {name} ({server.transport}: {target}) …", flush=True)
    manager = _connect([server], force=True)
    try:
        (st,) = manager.statuses()
        if st.status != "connected":
            sys.stderr.write(f"hermes: error: MCP server {name} {_failure(st)}\n")
            return 1
        print(f"✓ {name} connected: {len(st.tools)} tool{'s' if len(st.tools) != 1 else ''}"
              + ("" if server.enabled else " (disabled in config.yaml: the agent does not use it)"))
        for tool in st.tools:
            desc = st.descriptions.get(tool, "")
            print(f"  {tool}" + (f"  {desc[:100]}" if desc else ""))
        return 0
    finally:
        manager.shutdown()


def _failure(st: Any) -> str:
    if st.status == "connecting":
        return "did not connect in time (raise connect_timeout?)"
    return f"could not connect: {st.error or st.status}"


def mcp_status_rows(manager: Optional[Any]) -> list[dict]:
    """Rows for `/mcp` from the running manager (empty when none is configured)."""
    return [_row(st, connected=True) for st in manager.statuses()] if manager is not None else []
