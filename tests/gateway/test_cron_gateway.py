"""The scheduler inside `hermes gateway run` (a real subprocess), delivering to the fake Telegram Bot API,
runs answered by the loopback provider."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from hermes_state import SessionDB
from tests.fake_provider import error, slow, text
from tests.gateway.conftest import GatewayProcess, gateway_main
from tests.gateway.fake_telegram import FakeTelegram
from tests.waiting import wait_until

CHAT = 1001
API_KEY = "cron-test-key-0123456789abcdef"


@pytest.fixture
def env(hermes_home, gateway_process):
    (hermes_home / "config.yaml").write_text("cron:\n  tick_interval: 0.2\n  run_timeout: 60\n")
    fake = FakeTelegram().start()

    def start() -> GatewayProcess:
        return gateway_process(TELEGRAM_BOT_TOKEN=fake.token, TELEGRAM_BASE_URL=fake.base_url,
                               TELEGRAM_ALLOWED_USERS=str(CHAT), API_SERVER_KEY=API_KEY)

    db = SessionDB(hermes_home / "state.db")
    yield fake, db, start
    db.close()
    fake.stop()


def make_due(db: SessionDB, job_id: str) -> None:
    db.update_cron_job(job_id, next_run_at=time.time() - 1)


def finished_runs(db: SessionDB, job_id: str, n: int) -> list[dict]:
    """Wait until ``n`` runs of the job have finished; all its runs, newest first."""
    def done() -> list[dict] | None:
        runs = db.list_cron_runs(job_id)
        return runs if sum(r["status"] != "running" for r in runs) >= n else None
    return wait_until(done, what=f"{n} finished run(s) of {job_id}")


def test_a_job_made_in_the_chat_is_run_by_the_gateway_and_delivered_there(env, fake_provider, capsys):
    fake, db, start = env
    start()
    fake.push_message(CHAT, CHAT, "/cron add in 1h tell me a joke")
    [created] = fake.wait_for_sent(CHAT, 1)
    assert created.startswith("Created job ") and "delivers to origin" in created
    [job] = db.list_cron_jobs()
    assert job["origin"]["chat_id"] == str(CHAT) and job["deliver"] == "origin"

    fake_provider.queue(text("Why did the scheduler cross the road? Exactly once."))
    make_due(db, job["id"])
    sent = fake.wait_for_sent(CHAT, 2)
    assert sent[1] == "⏰ tell me a joke\n\nWhy did the scheduler cross the road? Exactly once."
    [run] = finished_runs(db, job["id"], 1)
    assert (run["status"], run["delivery"]) == ("ok", f"telegram:{CHAT} ok")
    assert db.get_cron_job(job["id"])["state"] == "completed"

    fake.push_message(CHAT, CHAT, "/cron add every 1d morning brief")
    fake.wait_for_sent(CHAT, 3)
    brief = [j for j in db.list_cron_jobs() if j["name"] == "morning brief"][0]
    fake.push_message(CHAT, CHAT, "/cron list")
    listing = fake.wait_for_sent(CHAT, 4)[3]
    assert brief["id"] in listing and job["id"] in listing and "completed" in listing

    fake_provider.queue(text("Markets are calm."))
    fake.push_message(CHAT, CHAT, "/cron run morning brief")
    sent = fake.wait_for_sent(CHAT, 6)
    assert sent[4].startswith(f"Running job {brief['id']}") and sent[5].endswith("Markets are calm.")
    assert db.get_cron_job(brief["id"])["next_run_at"] > time.time() + 3600  # a manual run moves nothing

    wait_until(lambda: (gateway_main(["status"]) == 0) and "next: morning brief" in capsys.readouterr().out,
               what="gateway status to show the scheduler")


def test_failures_are_sent_once_and_a_missing_chat_is_recorded(env, fake_provider, hermes_home):
    fake, db, start = env
    fake.missing_chats.add(555)
    from hermes_core.config import HermesConfig
    from cron.jobs import create_job

    cfg = HermesConfig()
    failing = create_job(db, prompt="check the build", schedule="every 1h", name="build",
                         deliver=f"telegram:{CHAT}", cfg=cfg)
    lost = create_job(db, prompt="hello", schedule="every 1h", deliver="telegram:555", cfg=cfg)
    fake_provider.handler = lambda body: (error(400, "model overloaded", type="invalid_request_error")
                                          if "check the build" in str(body["messages"]) else text("hi there"))
    start()
    for n in (1, 2):
        make_due(db, failing["id"])
        finished_runs(db, failing["id"], n)
    runs = db.list_cron_runs(failing["id"])
    assert [r["status"] for r in runs] == ["failed", "failed"] and "model overloaded" in runs[0]["error"]
    assert runs[0]["delivery"] == "not sent: same failure as the last one"
    notices = [t for t in fake.sent_texts(CHAT) if t.startswith("⚠ Scheduled job 'build' failed")]
    assert len(notices) == 1 and "model overloaded" in notices[0]

    make_due(db, lost["id"])  # the scheduler kept ticking through the failures
    [run] = finished_runs(db, lost["id"], 1)
    assert run["status"] == "ok" and run["delivery"].startswith("telegram:555 failed")
    assert "gateway.log" in run["delivery"]


def test_a_gateway_killed_mid_run_leaves_an_unknown_run_that_never_fires_again(env, fake_provider):
    fake, db, start = env
    from hermes_core.config import HermesConfig
    from cron.jobs import create_job

    job = create_job(db, prompt="long report", schedule="every 1h", deliver=f"telegram:{CHAT}",
                     cfg=HermesConfig())
    fake_provider.queue(slow(text("never delivered"), 120))
    gw = start()
    make_due(db, job["id"])
    assert fake_provider.wait_for_requests(1, timeout=60)
    [run] = db.list_cron_runs(job["id"])
    assert run["status"] == "running"
    gw.proc.kill()
    gw.proc.wait(30)

    start()
    wait_until(lambda: db.get_cron_run(run["id"])["status"] == "unknown", what="the run to become unknown")
    assert "not re-run" in db.get_cron_run(run["id"])["note"]
    fake_provider.queue(text("second report"))
    make_due(db, job["id"])  # the next occurrence comes
    fake.wait_for_sent(CHAT, 1)
    assert fake.sent_texts(CHAT) == ["⏰ long report\n\nsecond report"]
    runs = finished_runs(db, job["id"], 2)
    assert sorted(r["status"] for r in runs) == ["ok", "unknown"]
    assert len(fake_provider.requests) == 2  # the killed occurrence was not fired again


def api(gw: GatewayProcess, method: str, path: str, body: Any = None, key: str = API_KEY) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {key}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(gw.api + path, method=method, headers=headers,
                                 data=None if body is None else json.dumps(body).encode())
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_jobs_api(env, fake_provider):
    _fake, db, start = env
    gw = start()
    status, job = api(gw, "POST", "/api/jobs", {"schedule": "every 1h", "prompt": "status report",
                                                "name": "report"})
    assert status == 201 and job["schedule"] == "every 1h" and job["deliver"] == "local"
    status, listed = api(gw, "GET", "/api/jobs")
    assert status == 200 and [j["id"] for j in listed["data"]] == [job["id"]]
    status, got = api(gw, "GET", "/api/jobs/report")
    assert status == 200 and got["id"] == job["id"] and got["recent_runs"] == []
    status, patched = api(gw, "PATCH", f"/api/jobs/{job['id']}", {"schedule": "0 9 * * *", "repeat": 5})
    assert status == 200 and (patched["schedule"], patched["repeat"]) == ("0 9 * * *", 5)
    assert api(gw, "POST", f"/api/jobs/{job['id']}/pause")[1]["state"] == "paused"
    assert api(gw, "POST", f"/api/jobs/{job['id']}/resume")[1]["state"] == "scheduled"

    fake_provider.queue(text("all systems nominal"))
    status, started = api(gw, "POST", f"/api/jobs/{job['id']}/run")
    assert status == 202 and started["status"] == "running"
    [run] = finished_runs(db, job["id"], 1)
    assert run["id"] == started["id"] and run["status"] == "ok"
    assert api(gw, "GET", f"/api/jobs/{job['id']}")[1]["recent_runs"][0]["status"] == "ok"

    for body, words in (({"schedule": "30m", "prompt": "x"}, "ambiguous"),
                        ({"schedule": "every 1h", "prompt": "x", "colour": "red"}, "Unknown field(s): colour"),
                        ({"schedule": "2020-01-01T00:00", "prompt": "x"}, "in the past")):
        status, err = api(gw, "POST", "/api/jobs", body)
        assert status == 400 and words in err["error"]["message"], err
    assert api(gw, "GET", "/api/jobs/ghost")[0] == 404
    for _ in range(2):
        api(gw, "POST", "/api/jobs", {"schedule": "in 2h", "prompt": "x", "name": "twin"})
    status, err = api(gw, "POST", "/api/jobs/twin/run")
    assert status == 409 and "use the id" in err["error"]["message"]
    assert api(gw, "GET", "/api/jobs", key="wrong-key-0123456789abcdef")[0] == 401
    status, gone = api(gw, "DELETE", f"/api/jobs/{job['id']}")
    assert status == 200 and gone == {"id": job["id"], "object": "job", "deleted": True}
    assert api(gw, "GET", f"/api/jobs/{job['id']}")[0] == 404
    endpoints = api(gw, "GET", "/v1/capabilities")[1]["endpoints"]
    assert endpoints["jobs_run"] == {"method": "POST", "path": "/api/jobs/{job_id}/run"}


def test_a_job_made_in_a_chat_runs_with_that_platforms_toolsets(env, hermes_home):
    """``platform_toolsets`` picks what a Telegram chat's agents may use; a job made there records
    the same, not the gateway's defaults (scheduling is never a way around a platform's list)."""
    fake, db, start = env
    (hermes_home / "config.yaml").write_text(
        "cron:\n  tick_interval: 0.2\n  run_timeout: 60\nplatform_toolsets:\n  telegram: [todo]\n")
    start()
    fake.push_message(CHAT, CHAT, "/cron add in 1h tidy the list")
    [created] = fake.wait_for_sent(CHAT, 1)
    assert created.startswith("Created job "), created
    [job] = db.list_cron_jobs()
    assert job["policy"]["toolsets"] == ["todo"]
