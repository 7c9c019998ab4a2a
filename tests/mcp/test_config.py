"""`mcp_servers` parsing (pure): each bad entry is one line naming server and field; the rest load."""
from __future__ import annotations

from tools.mcp.config import (DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT, child_env, display_url,
                              parse_servers, tool_selected)

ENV = {"PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "GH_TOKEN": "ghp_secret_value",
       "OPENAI_API_KEY": "sk-parent-secret"}


def test_stdio_http_and_sse_entries_with_defaults():
    servers, errors = parse_servers({
        "fs": {"command": "npx", "args": ["-y", "server-fs", 7]},
        "web": {"url": "https://example.test/mcp", "headers": {"X-Id": 42}},
        "old": {"url": "http://127.0.0.1:9/sse", "transport": "sse", "enabled": False},
    }, ENV)
    assert errors == []
    fs, web, old = servers
    assert (fs.transport, fs.command, fs.args) == ("stdio", "npx", ("-y", "server-fs", "7"))
    assert (fs.timeout, fs.connect_timeout, fs.enabled) == (DEFAULT_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, True)
    assert (web.transport, web.headers) == ("http", {"X-Id": "42"})
    assert (old.transport, old.enabled) == ("sse", False)


def test_variables_come_from_the_environment():
    (srv,), errors = parse_servers({"gh": {"url": "https://api.test/mcp",
                                           "headers": {"Authorization": "Bearer ${GH_TOKEN}"}}}, ENV)
    assert errors == []
    assert srv.headers["Authorization"] == "Bearer ghp_secret_value"
    assert "ghp_secret_value" in srv.secrets()
    (plain,), _ = parse_servers({"p": {"command": "x", "env": {"MODE": "readonly-mode"}}}, ENV)
    assert plain.secrets() == []  # only secret-looking names are masked, not every value


def test_bad_entries_are_one_line_each_and_the_rest_still_load():
    servers, errors = parse_servers({
        "good": {"command": "tool"},
        "unset": {"command": "tool", "env": {"TOKEN": "${NOT_SET_ANYWHERE}"}},
        "slow": {"command": "tool", "timeout": "soon"},
        "both": {"command": "tool", "url": "http://x"},
        "neither": {"args": ["x"]},
        "ftp": {"url": "ftp://x"},
        "weird": {"url": "http://x", "transport": "carrier-pigeon"},
        "stdio_url": {"url": "http://x", "transport": "stdio"},
        "scalar": "npx server",
        "negative": {"command": "tool", "connect_timeout": -1},
        "tools": {"command": "tool", "tools": {"include": "a*"}},
    }, ENV)
    assert [s.name for s in servers] == ["good"]
    assert len(errors) == 10
    assert all(e.startswith("mcp_servers.") and "\n" not in e for e in errors)
    by_server = {e.split(":")[0].split(".", 1)[1]: e for e in errors}
    assert "NOT_SET_ANYWHERE" in by_server["unset"] and "`env.TOKEN`" in by_server["unset"]
    assert "`timeout`" in by_server["slow"]
    assert "both" in by_server["both"]
    assert "`command`" in by_server["neither"] and "`url`" in by_server["neither"]
    assert "http://" in by_server["ftp"]
    assert "carrier-pigeon" in by_server["weird"]
    assert "`connect_timeout`" in by_server["negative"]
    assert "`tools.include`" in by_server["tools"]


def test_not_a_mapping_at_all():
    assert parse_servers(["a", "b"], ENV) == ([], ["mcp_servers: must be a mapping of server name -> "
                                                   "settings, not list"])
    assert parse_servers(None, ENV) == ([], [])


def test_only_the_safe_base_and_the_configured_variables_reach_the_child():
    (srv,), _ = parse_servers({"s": {"command": "x", "env": {"API_TOKEN": "${GH_TOKEN}", "MODE": "ro"}}}, ENV)
    env = child_env(srv, ENV)
    assert env == {"PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8",
                   "API_TOKEN": "ghp_secret_value", "MODE": "ro"}
    assert "OPENAI_API_KEY" not in env and "GH_TOKEN" not in env


def test_include_then_exclude_by_name_or_glob():
    assert tool_selected("read_file", (), ())
    assert tool_selected("read_file", ("read_*",), ())
    assert not tool_selected("write_file", ("read_*",), ())
    assert not tool_selected("read_secret", ("read_*",), ("*secret*",))
    assert not tool_selected("delete", (), ("delete",))


def test_urls_are_shown_without_credentials_or_query():
    assert display_url("https://user:pw@api.test/mcp?key=abc") == "https://api.test/mcp?…"
    assert display_url("http://127.0.0.1:9/mcp") == "http://127.0.0.1:9/mcp"
