"""Issue 26 part 4: ``/v1/runs`` (start, status, SSE events, approval, stop), sessions create /
rename / fork, ``/v1/skills``, ``/v1/toolsets``, all advertised in ``/v1/capabilities``.

A real gateway runner and API server in-process, agents talking to the loopback fake provider; the
terminal toolset is on so a dangerous command parks an approval question in the run.
"""
from __future__ import annotations

import pytest

from hermes_core.config import HermesConfig
from tests.fake_provider import slow, text, tool_calls
from tests.gateway.sse import EventStream, post, request

TOOLSETS = {"gateway": {"toolsets": ["terminal", "file", "todo", "memory", "skills"]}}


@pytest.fixture
def gw(make_gateway, hermes_home):
    (hermes_home / "workspace").mkdir(exist_ok=True)
    return make_gateway(api=True, config=HermesConfig(**TOOLSETS))


def _api(gw) -> str:
    return gw.base_url[: -len("/v1")]


def _start(gw, body, headers=None):
    status, hdrs, raw = post(gw.base_url + "/runs", gw.api_key, body, headers)
    assert status == 202, raw
    import json

    return json.loads(raw), hdrs


def test_a_run_streams_asks_for_approval_and_completes(gw, fake_provider, hermes_home):
    junk = hermes_home / "workspace" / "junk"
    junk.mkdir()
    fake_provider.queue(tool_calls([("terminal", {"command": "rm -r junk"}, "call_rm")]),
                        text("Removed the junk folder."))
    run, hdrs = _start(gw, {"input": "clean up junk"}, {"X-Hermes-Session-Key": "runs-demo"})
    assert run["status"] in ("queued", "running") and run["id"].startswith("run_")
    assert hdrs["x-hermes-session-id"] == run["session_id"]
    events = EventStream(f"{gw.base_url}/runs/{run['id']}/events", gw.api_key)
    assert events.status == 200
    seen = events.until("approval.requested")
    names = [name for name, _, _ in seen]
    assert names[0] == "run.started" and "tool.started" in names
    question = seen[-1][1]
    assert question["command"] == "rm -r junk" and "recursive delete" in question["reason"]
    status, current = request("GET", f"{gw.base_url}/runs/{run['id']}", gw.api_key)
    assert current["status"] == "waiting_for_approval"
    assert current["pending_approval"]["approval_id"] == question["approval_id"]
    assert junk.exists()
    status, _, raw = post(f"{gw.base_url}/runs/{run['id']}/approval", gw.api_key,
                          {"choice": "once", "approval_id": question["approval_id"]})
    assert status == 200, raw
    rest = events.until("run.completed")
    events.close()
    names = [name for name, _, _ in rest]
    assert names[0] == "approval.resolved" and "tool.completed" in names
    done = [d for n, d, _ in rest if n == "tool.completed"][0]
    assert done["ok"] is True and done["tool"] == "terminal"
    deltas = "".join(d["delta"] for n, d, _ in rest if n == "message.delta")
    assert deltas == "Removed the junk folder."
    assert not junk.exists()
    status, final = request("GET", f"{gw.base_url}/runs/{run['id']}", gw.api_key)
    assert final["status"] == "completed" and final["output"] == "Removed the junk folder."
    # a client coming back with Last-Event-ID gets only what it missed
    again = EventStream(f"{gw.base_url}/runs/{run['id']}/events", gw.api_key,
                        {"Last-Event-ID": str(len(seen))})
    first = again.next()
    again.close()
    assert first is not None and first[2] == str(len(seen) + 1) and first[0] == "approval.resolved"
    # the transcript is the session's
    stored = [m["content"] for m in gw.db.get_messages(run["session_id"]) if m["role"] == "user"]
    assert stored == ["clean up junk"]


def test_stop_denies_the_pending_question_and_cancels(gw, fake_provider, hermes_home):
    junk = hermes_home / "workspace" / "keep"
    junk.mkdir()
    fake_provider.queue(tool_calls([("terminal", {"command": "rm -r keep"}, "call_rm2")]),
                        text("I could not remove it."))
    run, _ = _start(gw, {"input": "remove keep"}, {"X-Hermes-Session-Key": "stopper"})
    events = EventStream(f"{gw.base_url}/runs/{run['id']}/events", gw.api_key)
    events.until("approval.requested")
    status, _, raw = post(f"{gw.base_url}/runs/{run['id']}/stop", gw.api_key, {})
    assert status == 200, raw
    rest = events.until("run.cancelled")
    events.close()
    resolved = [d for n, d, _ in rest if n == "approval.resolved"][0]
    assert resolved["choice"] == "deny"
    assert junk.exists()
    status, body = request("GET", f"{gw.base_url}/runs/{run['id']}", gw.api_key)
    assert body["status"] == "cancelled"
    url = f"{gw.base_url}/runs/{run['id']}"
    status, _, raw = post(url + "/approval", gw.api_key, {"choice": "once"})
    assert status == 409 and "no_pending_approval" in raw


def test_stop_before_an_answer_and_bad_requests(gw, fake_provider):
    fake_provider.queue(slow(text("too late"), 30))
    run, _ = _start(gw, {"input": "take your time", "session_id": "slow-one"})
    fake_provider.wait_for_requests(1, 30)
    status, _, _ = post(f"{gw.base_url}/runs/{run['id']}/stop", gw.api_key, {})
    assert status == 200
    events = EventStream(f"{gw.base_url}/runs/{run['id']}/events", gw.api_key)
    names = [n for n, _, _ in events.until("run.cancelled")]
    events.close()
    assert names[0] == "run.started"
    assert post(gw.base_url + "/runs", gw.api_key, {"input": ""})[0] == 400
    bad = {"input": "x", "conversation_history": 3}
    assert post(gw.base_url + "/runs", gw.api_key, bad)[0] == 400
    assert request("GET", f"{gw.base_url}/runs/run_nope", gw.api_key)[0] == 404
    url = f"{gw.base_url}/runs/{run['id']}"
    status, _, raw = post(url + "/approval", gw.api_key, {"choice": "maybe"})
    assert status == 400
    assert request("GET", f"{gw.base_url}/runs/{run['id']}", None)[0] == 401


def test_sessions_create_rename_fork(gw, fake_provider):
    api = _api(gw)
    status, _, raw = post(api + "/api/sessions", gw.api_key, {"title": "Plans"})
    assert status == 201, raw
    import json

    made = json.loads(raw)
    assert made["object"] == "hermes.session" and made["title"] == "Plans"
    fake_provider.queue(text("noted"))
    run, _ = _start(gw, {"input": "the code is 314", "session_id": made["id"]})
    events = EventStream(f"{gw.base_url}/runs/{run['id']}/events", gw.api_key)
    events.until("run.completed")
    events.close()
    assert run["session_id"] == made["id"]
    status, renamed = _patch(api + f"/api/sessions/{made['id']}", gw.api_key, {"title": "Plans v2"})
    assert status == 200 and renamed["title"] == "Plans v2"
    assert _patch(api + f"/api/sessions/{made['id']}", gw.api_key, {"title": 5})[0] == 400
    status, _, raw = post(api + f"/api/sessions/{made['id']}/fork", gw.api_key, {"title": "Branch"})
    assert status == 201, raw
    fork = json.loads(raw)
    assert fork["parent_session_id"] == made["id"] and fork["id"] != made["id"]
    copied = [m["content"] for m in gw.db.get_messages(fork["id"])]
    assert copied == ["the code is 314", "noted"]
    status, _, raw = post(api + "/api/sessions", gw.api_key, {"title": "Branch"})
    assert status == 409 and "title_taken" in raw
    assert post(api + "/api/sessions/nope/fork", gw.api_key, {})[0] == 404


def _patch(url, key, body):
    import http.client
    import json
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request("PATCH", parts.path, body=json.dumps(body),
                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    resp = conn.getresponse()
    out = resp.status, json.loads(resp.read() or b"null")
    conn.close()
    return out


def test_skills_toolsets_and_capabilities(gw):
    status, skills = request("GET", gw.base_url + "/skills", gw.api_key)
    assert status == 200
    names = {s["name"] for s in skills["data"]}
    assert {"code-review", "debugging"} <= names
    status, toolsets = request("GET", gw.base_url + "/toolsets", gw.api_key)
    by_name = {t["name"]: t for t in toolsets["data"]}
    assert by_name["terminal"]["enabled"] is True and "terminal" in by_name["terminal"]["tools"]
    assert by_name["delegation"]["enabled"] is False
    status, caps = request("GET", gw.base_url + "/capabilities", gw.api_key)
    eps = caps["endpoints"]
    assert eps["runs_create"] == {"method": "POST", "path": "/v1/runs"}
    assert eps["runs_events"]["path"] == "/v1/runs/{run_id}/events"
    assert eps["runs_approval"]["path"] == "/v1/runs/{run_id}/approval"
    assert eps["runs_stop"]["path"] == "/v1/runs/{run_id}/stop"
    assert eps["session_create"] == {"method": "POST", "path": "/api/sessions"}
    assert eps["session_update"]["method"] == "PATCH"
    assert eps["session_fork"]["path"] == "/api/sessions/{session_id}/fork"
    assert eps["skills_list"]["path"] == "/v1/skills"
    assert eps["toolsets_list"]["path"] == "/v1/toolsets"
    for feature in ("run_submission", "run_status", "run_events_sse", "run_stop", "run_approval"):
        assert caps["features"][feature] is True
