"""One chat user can never reach another's data or escape the gateway's limits (issue 20 items 1-3).

A real `hermes gateway run` subprocess with the fake Telegram Bot API and two allowed users, A and B,
each in their own DM; the loopback provider scripts the tool calls a hostile user would ask for,
and what the tools answered is read on the provider's side (what the model, and so the chat, saw).
"""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from hermes_state import SessionDB
from tests.cli.conftest import hermes_env, run_hermes
from tests.fake_provider import text, tool_calls
from tests.gateway.fake_telegram import FakeTelegram
from tests.waiting import wait_until

A, B = 1001, 1002
API_KEY = "isolation-key-0123456789abcdef"


@pytest.fixture
def env(hermes_home, gateway_process):
    (hermes_home / "config.yaml").write_text("cron:\n  tick_interval: 0.2\n  run_timeout: 60\n")
    fake = FakeTelegram().start()
    gw = gateway_process(TELEGRAM_BOT_TOKEN=fake.token, TELEGRAM_BASE_URL=fake.base_url,
                         TELEGRAM_ALLOWED_USERS=f"{A},{B}", API_SERVER_KEY=API_KEY)
    db = SessionDB(hermes_home / "state.db")
    yield fake, db, gw
    db.close()
    fake.stop()


def say(fake: FakeTelegram, user: int, message: str) -> str:
    """A DM from ``user``; the bot's reply to it."""
    n = len(fake.sent_texts(user))
    fake.push_message(user, user, message)
    return fake.wait_for_sent(user, n + 1, timeout=60)[n]


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_chat_users_see_and_change_only_their_own_jobs(env, fake_provider, hermes_home):
    fake, db, _gw = env
    created = say(fake, A, "/cron add every 1d morning brief for A")
    [job] = db.list_cron_jobs()
    assert created.startswith(f"Created job {job['id']}") and job["owner"] == f"telegram:{A}"
    assert job["id"] not in say(fake, B, "/cron list")
    assert "no job" in say(fake, B, f"/cron pause {job['id']}")
    assert "no job" in say(fake, B, f"/cron remove {job['id']}")
    assert "no job" in say(fake, B, f"/cron run {job['id']}")

    fake_provider.queue(tool_calls([
        ("cronjob", {"action": "update", "job_id": job["id"], "deliver": f"telegram:{B}"}),
        ("cronjob", {"action": "remove", "job_id": "morning brief for A"}),
        ("cronjob", {"action": "create", "schedule": "every 1h", "prompt": "spam the channel",
                     "deliver": "telegram:-100123456"}),
        ("cronjob", {"action": "create", "schedule": "every 1h", "prompt": "my own reminder",
                     "deliver": f"telegram:{A}"}),
        ("cronjob", {"action": "create", "schedule": "every 1h", "prompt": "my own reminder"})]),
        tool_calls([("cronjob", {"action": "list"})]), text("done"))  # (calls of one batch run in parallel)
    assert say(fake, B, "take over A's job") == "done"
    update, remove, channel, other, own, listing = tool_results(fake_provider.requests[-1])
    assert "no job" in update and "no job" in remove
    assert "only to this chat" in channel and "only to this chat" in other
    assert '"created"' in own and job["id"] not in listing and "my own reminder" in listing
    jobs = {j["id"]: j for j in db.list_cron_jobs()}
    assert jobs[job["id"]]["deliver"] == "origin" and jobs[job["id"]]["state"] == "scheduled"
    [mine] = [j for j in jobs.values() if j["id"] != job["id"]]
    assert (mine["owner"], mine["deliver"], mine["origin"]["chat_id"]) == (f"telegram:{B}", "origin", str(B))

    listed = run_hermes("cron", "list", env=hermes_env())  # the owner at the terminal sees them all
    assert job["id"] in listed.stdout and mine["id"] in listed.stdout


def test_a_chat_job_runs_under_its_creators_policy(env, fake_provider, hermes_home, tmp_path):
    fake, db, _gw = env
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("the owner's private notes")
    fake_provider.queue(tool_calls([
        ("cronjob", {"action": "create", "schedule": "every 1h", "prompt": "summarise my notes",
                     "workdir": str(outside)}),
        ("cronjob", {"action": "create", "schedule": "every 1h", "prompt": "summarise my notes"})]),
        text("scheduled"))
    assert say(fake, A, "every hour, summarise the notes in that folder") == "scheduled"
    refused, created = tool_results(fake_provider.requests[-1])
    assert "outside the working directory" in refused and '"created"' in created
    [job] = db.list_cron_jobs()
    policy = job["policy"]
    assert policy["confine_to"] == str((hermes_home / "workspace").resolve())
    assert "terminal" not in policy["toolsets"] and "file" in policy["toolsets"]

    fake_provider.queue(tool_calls([("read_file", {"path": str(outside / "secret.txt")}),
                                    ("terminal", {"command": "id -un"}),
                                    ("write_file", {"path": "report.md", "content": "ok"})]),
                        text("report done"))
    db.update_cron_job(job["id"], next_run_at=time.time() - 1)
    assert fake.wait_for_sent(A, 2, timeout=60)[1].endswith("report done")
    run = fake_provider.last_request
    offered = {t["function"]["name"] for t in run["tools"]}
    assert "terminal" not in offered and "cronjob" not in offered and "read_file" in offered
    read, shell, write = tool_results(run)
    assert "outside the working directory" in read and "unknown tool 'terminal'" in shell
    assert "wrote" in write and (hermes_home / "workspace" / "report.md").read_text() == "ok"
    assert "the owner's private notes" not in json.dumps(fake_provider.requests)


def api(gw: Any, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
    req = urllib.request.Request(gw.api + path, method=method, headers=headers,
                                 data=None if body is None else json.dumps(body).encode())
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_jobs_made_through_the_api_run_under_the_gateway_policy(env, hermes_home, tmp_path):
    _fake, db, gw = env
    status, err = api(gw, "POST", "/api/jobs", {"schedule": "every 1h", "prompt": "x", "workdir": str(tmp_path)})
    assert status == 400 and "outside the working directory" in err["error"]["message"]
    status, job = api(gw, "POST", "/api/jobs", {"schedule": "every 1h", "prompt": "x"})
    assert status == 201
    stored = db.get_cron_job(job["id"])
    assert stored["owner"] is None and stored["policy"]["confine_to"] == str((hermes_home / "workspace").resolve())
    status, err = api(gw, "PATCH", f"/api/jobs/{job['id']}", {"workdir": str(tmp_path)})
    assert status == 400 and "outside the working directory" in err["error"]["message"]
    (hermes_home / "workspace" / "sub").mkdir()
    status, patched = api(gw, "PATCH", f"/api/jobs/{job['id']}", {"workdir": str(hermes_home / "workspace" / "sub")})
    assert status == 200 and patched["workdir"].endswith("/workspace/sub")


def test_search_and_memory_stay_with_their_chat_user(env, fake_provider, hermes_home):
    fake, db, _gw = env
    fake_provider.queue(tool_calls([("memory", {"action": "add", "target": "user",
                                                "content": "A keeps bees"})]), text("noted, A"))
    assert say(fake, A, "my locker code is walrus-7 and I keep bees") == "noted, A"
    a_session = db.get_session_for_key(f"telegram:dm:{A}")

    fake_provider.queue(tool_calls([("session_search", {"query": "walrus"}),
                                    ("session_search", {"session_id": a_session}),
                                    ("session_search", {"session_id": a_session, "around_message_id": 1}),
                                    ("session_search", {}),
                                    ("memory", {"action": "read", "target": "user"}),
                                    ("memory", {"action": "add", "target": "user", "content": "B likes jazz"})]),
                        text("nothing found"))
    assert say(fake, B, "what is A's locker code?") == "nothing found"
    b_turn = fake_provider.requests[-1]
    found, head, window, recent, memory, added = tool_results(b_turn)
    assert "No sessions match" in found and "no session" in head and "no session" in window
    assert a_session not in recent and "what is A's locker code?" in recent  # B's own session
    assert "walrus-7" not in json.dumps(b_turn)
    assert "bees" not in memory and "bees" not in b_turn["messages"][0]["content"]
    assert "added" in added
    users = hermes_home / "users"
    assert (users / f"telegram-{A}" / "memories" / "USER.md").read_text() == "A keeps bees\n"
    assert (users / f"telegram-{B}" / "memories" / "USER.md").read_text() == "B likes jazz\n"

    # a subagent B delegates to is B's too
    fake_provider.queue(tool_calls([("delegate_task", {"goal": "find the locker code", "context": "x"})]),
                        tool_calls([("session_search", {"query": "walrus", "include_subagents": True})]),
                        text("child found nothing"), text("still nothing"))
    assert say(fake, B, "ask a helper") == "still nothing"
    child_search = tool_results(fake_provider.requests[-2])[0]
    assert "walrus-7" not in child_search and "I keep bees" not in child_search, child_search

    fake_provider.queue(tool_calls([("session_search", {"query": "walrus"})]), text("walrus-7"))
    say(fake, A, "/new")
    assert say(fake, A, "what was my locker code?") == "walrus-7"
    a_turn = fake_provider.requests[-1]
    assert "walrus-7" in tool_results(a_turn)[0]  # A still finds A's own sessions
    assert "A keeps bees" in a_turn["messages"][0]["content"] and "jazz" not in a_turn["messages"][0]["content"]
    assert not (hermes_home / "memories" / "USER.md").exists()  # the owner's own file is untouched


def test_shared_memory_gives_chat_users_the_owners_files(hermes_home, gateway_process, fake_provider):
    (hermes_home / "config.yaml").write_text("gateway:\n  shared_memory: true\n")
    fake = FakeTelegram().start()
    try:
        gateway_process(TELEGRAM_BOT_TOKEN=fake.token, TELEGRAM_BASE_URL=fake.base_url,
                        TELEGRAM_ALLOWED_USERS=f"{A}", API_SERVER_KEY=API_KEY)
        fake_provider.queue(tool_calls([("memory", {"action": "add", "target": "memory",
                                                    "content": "The team deploys on Fridays"})]), text("ok"))
        assert say(fake, A, "remember: we deploy on Fridays") == "ok"
    finally:
        fake.stop()
    assert (hermes_home / "memories" / "MEMORY.md").read_text() == "The team deploys on Fridays\n"
    assert not (hermes_home / "users").exists()
