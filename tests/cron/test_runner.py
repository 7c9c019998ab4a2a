"""Runs: the agent's answer judged, written and delivered (a recording Sender stands in for Telegram;
the Telegram paths themselves are tested against the fake Bot API in tests/gateway)."""
from __future__ import annotations

import time

import pytest

from hermes_core.config import HermesConfig
from cron import delivery
from cron.delivery import DeliveryError, Target, destinations, parse_targets
from cron.jobs import create_job
from cron.runner import _judge
from cron.scheduler import Scheduler
from hermes_state import SessionDB
from tests.fake_provider import error, slow, text

ORIGIN = {"platform": "telegram", "chat_id": "42", "thread_id": "7"}


@pytest.fixture
def db(hermes_home):
    with SessionDB(hermes_home / "state.db") as d:
        yield d


@pytest.fixture
def provider_env(fake_provider, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", fake_provider.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    return fake_provider


class Recorder:
    """A Sender that keeps what it was asked to send; ``fail`` makes it refuse like a dead chat."""

    def __init__(self, fail: str | None = None) -> None:
        self.sent: list[tuple[str, str, str | None, str]] = []
        self.fail = fail

    def __call__(self, platform: str, chat_id: str, thread_id: str | None, body: str) -> None:
        if self.fail:
            raise DeliveryError(self.fail)
        self.sent.append((platform, chat_id, thread_id, body))


def run_now(db, job, sender, cfg=None):
    sched = Scheduler(db, cfg or HermesConfig(), sender=sender)
    _run, fut = sched.run_now(job)
    outcome = fut.result(timeout=120)
    sched.shutdown()
    return outcome


@pytest.mark.parametrize("result, status", [
    ({"final_response": "Here it is.", "completed": True}, "ok"),
    ({"final_response": "  [SILENT]\n", "completed": True}, "silent"),
    ({"final_response": "[SILENT] but also this", "completed": True}, "ok"),
    ({"final_response": "", "completed": False, "api_calls": 90}, "failed"),
    ({"failed": True, "error": "Provider said no"}, "failed"),
    ({"compression_exhausted": True, "final_response": "too long"}, "failed"),
    ({"interrupted": True}, "interrupted"),
    (None, "failed"),
])
def test_judge(result, status):
    assert _judge(result)[0] == status


def test_targets_resolve_to_chats(monkeypatch):
    monkeypatch.setenv("TELEGRAM_HOME_CHANNEL", "-100200")
    targets = parse_targets("origin,telegram,telegram:-100200,local,telegram:5:9", ORIGIN)
    assert [t.kind for t in targets] == ["origin", "home", "chat", "local", "chat"]
    assert destinations(targets, ORIGIN) == [("telegram", "42", "7"), ("telegram", "-100200", None),
                                             ("telegram", "5", "9")]
    monkeypatch.delenv("TELEGRAM_HOME_CHANNEL")
    with pytest.raises(DeliveryError, match="HOME_CHANNEL"):
        destinations([Target("home", "telegram")], None)


def test_answer_goes_to_the_origin_chat_and_silence_sends_nothing(db, provider_env):
    job = create_job(db, prompt="news?", schedule="every 1h", name="news", origin=ORIGIN, cfg=HermesConfig())
    sender = Recorder()
    provider_env.queue(text("Big news today."), text("[SILENT]"))
    first = run_now(db, job, sender)
    assert first.status == "ok" and first.delivery == "telegram:42:7 ok"
    assert sender.sent == [("telegram", "42", "7", "⏰ news\n\nBig news today.")]
    second = run_now(db, job, sender)
    assert second.status == "silent" and second.delivery is None and len(sender.sent) == 1
    assert "[SILENT]" in open(second.output_path).read()  # the file still records it


def test_a_failure_is_sent_once_until_the_job_succeeds_again(db, provider_env):
    job = create_job(db, prompt="build?", schedule="every 1h", name="build", origin=ORIGIN, cfg=HermesConfig())
    sender = Recorder()
    provider_env.queue(error(400, "bad model"), error(400, "bad model"), text("green"), error(400, "bad model"))
    outcomes = [run_now(db, job, sender) for _ in range(4)]
    assert [o.status for o in outcomes] == ["failed", "failed", "ok", "failed"]
    assert outcomes[1].delivery == "not sent: same failure as the last one"
    notices = [body for *_, body in sender.sent if body.startswith("⚠")]
    assert len(notices) == 2 and all("bad model" in n for n in notices)
    assert [r["status"] for r in db.list_cron_runs(job["id"])] == ["failed", "ok", "failed", "failed"]


def test_a_dead_target_is_recorded_and_the_run_still_counts(db, provider_env):
    job = create_job(db, prompt="hi", schedule="every 1h", deliver="telegram:999,local", cfg=HermesConfig())
    provider_env.queue(text("hello"))
    outcome = run_now(db, job, Recorder(fail="Bad Request: chat not found"))
    assert outcome.status == "ok" and outcome.delivery == "telegram:999 failed: Bad Request: chat not found"
    [run] = db.list_cron_runs(job["id"])
    assert run["status"] == "ok" and "chat not found" in run["delivery"]


def test_local_jobs_send_nothing(db, provider_env):
    job = create_job(db, prompt="hi", schedule="every 1h", cfg=HermesConfig())
    sender = Recorder()
    provider_env.queue(error(400, "nope"))
    assert run_now(db, job, sender).status == "failed" and sender.sent == []


def test_a_long_run_keeps_its_heartbeat(db, provider_env):
    cfg = HermesConfig.model_validate({"cron": {"tick_interval": 0.1}})
    job = create_job(db, prompt="slow", schedule="every 1h", cfg=cfg)
    provider_env.queue(slow(text("done"), 1.5))
    sched = Scheduler(db, cfg, sender=Recorder())
    run, fut = sched.run_now(job)
    first = db.get_cron_run(run["run_id"])["heartbeat_at"]
    deadline = time.monotonic() + 30
    while db.get_cron_run(run["run_id"])["heartbeat_at"] == first:
        assert time.monotonic() < deadline and not fut.done(), "no heartbeat while the run went on"
        time.sleep(0.05)
    assert fut.result(timeout=60).status == "ok"
    sched.shutdown()
    assert delivery.is_silent(" [SILENT] ")


def test_shutdown_interrupts_running_runs_and_records_queued_ones(db, provider_env):
    job = create_job(db, prompt="slow", schedule="every 1h", cfg=HermesConfig())
    provider_env.queue(slow(text("late"), 60))
    sched = Scheduler(db, HermesConfig(), sender=Recorder(), max_parallel=1)
    first, fut1 = sched.run_now(job)
    second, fut2 = sched.run_now(job)  # waits for the only worker
    assert provider_env.wait_for_requests(1, timeout=60)
    sched.shutdown(drain_timeout=0.2)
    assert fut1.result(timeout=30).status == "interrupted" and fut2.cancelled()
    assert db.get_cron_run(first["run_id"])["status"] == "interrupted"
    queued = db.get_cron_run(second["run_id"])
    assert queued["status"] == "interrupted" and "before this run started" in queued["error"]
