"""The dashboard's own JSON routes on a real ``hermes dashboard``: memory edits (refused when the
file changed meanwhile), config set with validation (secrets to .env, shown masked), search,
status, the token and the same-origin rule."""
from __future__ import annotations

from tests.dashboard.conftest import request


def test_memory_edit_and_a_conflict(dashboard):
    status, mem = request(dashboard, "GET", "/api/dashboard/memory")
    assert status == 200 and mem["memory"]["text"] == ""
    text = "The user's cat is called Io.\n§\nProjects live in ~/src."
    status, after = request(dashboard, "PUT", "/api/dashboard/memory/memory",
                            {"text": text, "expected": ""})
    assert status == 200 and after["memory"]["entries"] == 2
    path = dashboard.home / "memories" / "MEMORY.md"
    assert "cat is called Io" in path.read_text()
    status, body = request(dashboard, "PUT", "/api/dashboard/memory/memory",
                           {"text": "something else", "expected": ""})  # stale page
    assert status == 409 and body["error"]["code"] == "memory_changed"
    assert "cat is called Io" in path.read_text()
    assert request(dashboard, "PUT", "/api/dashboard/memory/nope",
                   {"text": "", "expected": ""})[0] == 404


def test_config_set_validates_and_masks_secrets(dashboard):
    status, body = request(dashboard, "POST", "/api/dashboard/config",
                           {"key": "compression.threshold", "value": "0.6"})
    assert status == 200 and "compression.threshold = 0.6" in body["message"]
    assert "threshold: 0.6" in body["yaml"]
    status, body = request(dashboard, "POST", "/api/dashboard/config",
                           {"key": "compression.threshold", "value": "lots"})
    assert status == 400 and body["error"]["code"] == "invalid_config"
    assert "threshold: 0.6" in (dashboard.home / "config.yaml").read_text()
    secret = "sk-live-abcdefghijklmnopqrstuvwxyz"
    status, body = request(dashboard, "POST", "/api/dashboard/config",
                           {"key": "model.api_key", "value": secret})
    assert status == 200 and secret not in str(body)
    assert "OPENAI_API_KEY" in body["env"] and secret not in body["env"]["OPENAI_API_KEY"]
    assert secret in (dashboard.home / ".env").read_text()


def test_search_status_and_security(dashboard):
    status, hits = request(dashboard, "GET", "/api/dashboard/search?q=zzzunlikely")
    assert status == 200 and hits["data"] == []
    status, st = request(dashboard, "GET", "/api/dashboard/status")
    assert status == 200 and st["served_by"] == "hermes dashboard"
    assert request(dashboard, "GET", "/api/dashboard/status", token="wrong-token-xyz")[0] == 401
    assert request(dashboard, "GET", "/api/dashboard/status", token=None)[0] == 401
    status, page = request(dashboard, "GET", "/dashboard/", token=None)
    assert status == 200 and "Hermes dashboard" in page
    # a drive-by POST from another site: refused before anything runs
    evil = {"Origin": "http://attacker.example"}
    status, _ = request(dashboard, "POST", "/api/sessions", {}, headers=evil)
    assert status == 403
    status, _ = request(dashboard, "POST", "/api/sessions", {},
                        headers={"Content-Type": "text/plain"})
    assert status == 415
    host = dashboard.base.split("//", 1)[1]
    status, _ = request(dashboard, "GET", "/api/dashboard/status", headers={"Host": "evil.example"})
    assert status == 421
    same = {"Origin": dashboard.base}
    status, made = request(dashboard, "POST", "/api/sessions", {}, headers=same)
    assert status == 201 and made["object"] == "hermes.session" and host
