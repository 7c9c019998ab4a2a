"""The PostgreSQL password of ``store.url`` (issue 20 item 10) and ``${VAR}`` values expanded into
MCP server settings (item 11) never show in clear: ``hermes config show|get``, ``hermes mcp
list|test`` as real subprocesses, and ``read_file config.yaml`` as the model sees it."""
from __future__ import annotations

import json

from tests.cli.conftest import hermes_env, run_hermes
from tests.fake_provider import text, tool_calls

PASSWORD = "pg-Pa55word-7d1e"
URL = f"postgresql://hermes:{PASSWORD}@127.0.0.1:1/hermes"


def test_config_show_and_get_mask_the_store_password(hermes_home):
    (hermes_home / "config.yaml").write_text(f"store:\n  url: {URL}\nmodel:\n  name: m\n")
    (hermes_home / ".env").write_text(f"HERMES_DATABASE_URL={URL}\n")
    env = hermes_env()
    env.pop("HERMES_DATABASE_URL", None)
    shown = run_hermes("config", "show", env=env)
    assert shown.returncode == 0, shown.stderr
    assert PASSWORD not in shown.stdout + shown.stderr
    assert "postgresql://hermes:***@127.0.0.1:1/hermes" in shown.stdout
    assert "HERMES_DATABASE_URL=postgresql://hermes:***@127.0.0.1:1/hermes" in shown.stdout
    got = run_hermes("config", "get", "store.url", env=env)
    assert got.returncode == 0 and got.stdout == "postgresql://hermes:***@127.0.0.1:1/hermes\n"
    assert PASSWORD not in got.stderr
    got = run_hermes("config", "get", "store", env=env)
    assert got.returncode == 0 and PASSWORD not in got.stdout and "hermes:***@" in got.stdout


def test_read_file_of_config_yaml_masks_the_store_password(hermes_home, make_agent, fake_provider,
                                                            tmp_path):
    from hermes_state import SessionDB

    config = hermes_home / "config.yaml"
    config.write_text(f"store:\n  url: {URL}\n")
    fake_provider.queue(tool_calls([("read_file", {"path": str(config)})]), text("read it"))
    db = SessionDB(tmp_path / "state.db")
    try:
        agent = make_agent(session_db=db)
        assert agent.run_conversation("show me config.yaml")["final_response"] == "read it"
    finally:
        db.close()
    sent = json.dumps(fake_provider.requests)
    assert PASSWORD not in sent and "hermes:***@127.0.0.1:1/hermes" in sent


def test_mcp_list_and_test_never_show_values_expanded_from_variables(hermes_home):
    import sys

    import yaml

    from tests.mcp.conftest import SERVER

    arg_token, url_token = "arg-secret-0f9e8d7c6b", "url-secret-a1b2c3d4e5"
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": {
        "scripted": {"command": sys.executable, "args": [SERVER, "--name", "${HERMES_TEST_ARG}"],
                     "connect_timeout": 20},
        "web": {"url": "http://127.0.0.1:9/${HERMES_TEST_URL}/mcp", "connect_timeout": 5}}}))
    env = hermes_env(HERMES_TEST_ARG=arg_token, HERMES_TEST_URL=url_token)
    runs = [run_hermes(*args, env=env, timeout=120) for args in (
        ("mcp", "list"), ("mcp", "list", "--json"), ("mcp", "test", "scripted"), ("mcp", "test", "web"))]
    outputs = [r.stdout + r.stderr for r in runs]
    listed, _, tested, failed = outputs
    assert "connected" in listed and "--name ***" in listed and "9/***/mcp" in listed
    rows = {row["name"]: row for row in json.loads(runs[1].stdout)}
    assert rows["scripted"]["status"] == "connected" and rows["web"]["status"] == "failed"
    assert "connected" in tested and "--name ***" in tested and "could not connect" in failed
    logs = "".join(p.read_text(errors="replace") for p in (hermes_home / "logs").glob("*")
                   if p.is_file()) if (hermes_home / "logs").is_dir() else ""
    for out in (*outputs, logs):
        assert arg_token not in out and url_token not in out
