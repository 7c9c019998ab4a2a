"""`platform_toolsets:` (issue 24): a real gateway serving Telegram (the fake Bot API) and the API
server at once; the tools each platform's agent offers the loopback provider follow its entry, a
platform without one keeps the gateway's defaults, and an unknown toolset name is a start-up
warning that narrows that platform only."""
from __future__ import annotations

import logging

from agent.tool_policy import gateway_toolsets, read_platform_toolsets
from hermes_core.config import HermesConfig, parse_config
from tests.fake_provider import text
from tests.gateway.sse import post

USER = 1001


def offered(body: dict) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools") or ()}


def test_each_platform_gets_its_own_toolsets(make_gateway, fake_telegram, provider_env,
                                             monkeypatch, caplog):
    monkeypatch.setenv("TELEGRAM_ALLOWED_USERS", str(USER))
    cfg = parse_config({"platform_toolsets": {"telegram": ["todo", "memory", "no-such-set"],
                                              "discord": "hermes-discord"}})
    with caplog.at_level(logging.WARNING, logger="gateway.runner"):
        gw = make_gateway(telegram=fake_telegram, api=True, config=cfg)
    [warning] = [r.getMessage() for r in caplog.records if "platform_toolsets" in r.getMessage()]
    assert "platform_toolsets`.telegram: unknown toolset 'no-such-set' left out" in warning
    assert "valid toolsets: " in warning and "todo" in warning

    provider_env.queue(text("from telegram"))
    fake_telegram.push_message(USER, USER, "which tools?")
    assert fake_telegram.wait_for_sent(USER) == ["from telegram"]
    provider_env.queue(text("from the api"))
    status, _, _ = post(f"{gw.base_url}/chat/completions", gw.api_key,
                        {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]})
    assert status == 200
    telegram, api = (offered(body) for body in provider_env.requests)
    assert telegram == {"todo", "memory"}
    assert {"todo", "read_file", "write_file"} <= api and "terminal" not in api  # the defaults


def test_entries_are_read_one_by_one():
    valid = ["web", "file", "todo"]
    assert read_platform_toolsets(None, valid) == ({}, [])
    lists, problems = read_platform_toolsets(
        {"telegram": "web, file", "cli": ["hermes-cli"], "slack": 3, "matrix": ["mcp-github"]},
        valid)
    assert lists == {"telegram": ["web", "file"], "matrix": ["mcp-github"]}
    assert problems == ["config.yaml `platform_toolsets`.slack must be a list of toolset names; "
                        "the gateway's default toolsets serve slack"]
    assert read_platform_toolsets(["web"], valid)[1][0].endswith("it is ignored")
    assert read_platform_toolsets({"email": []}, valid) == ({"email": []}, [])  # no tools at all
    assert gateway_toolsets(HermesConfig().gateway)[1] == []
