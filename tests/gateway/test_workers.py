"""``hermes gateway run --workers 2`` for real: a supervisor, two worker processes sharing the API port,
one PostgreSQL store. A worker SIGKILLed mid-turn loses nothing and comes back; SIGTERM drains; the
Telegram poller moves to the other worker when its worker dies; SQLite refuses more than one worker.
Nothing here is timed: every wait polls for the state it needs, with a timeout."""
from __future__ import annotations

import json
import os
import queue
import signal
import threading
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from gateway.status import read_status
from hermes_state import SessionDB
from tests.cli.conftest import hermes_env, run_hermes
from tests.fake_provider import text
from tests.gateway.conftest import GatewayProcess
from tests.gateway.fake_telegram import FakeTelegram
from tests.gateway.test_load_process import wait_until
from tests.postgres import terminate_backend

KEY = "X-Hermes-Session-Key"
HOLD = "hold this turn"


def _contents(body: dict) -> list[str]:
    return [m.get("content") for m in body["messages"] if m.get("role") in ("user", "assistant")]


def chat(gw: GatewayProcess, content: str, session: str) -> tuple[int, Any, Any]:
    body = {"model": "m", "messages": [{"role": "user", "content": content}]}
    return api(gw, "POST", "/v1/chat/completions", body, {KEY: session})


def api(gw: GatewayProcess, method: str, path: str, body: Optional[dict] = None,
        headers: Optional[dict[str, str]] = None) -> tuple[int, Any, Any]:
    """(status, headers, JSON) of one request, on a new connection (so on any worker)."""
    hdrs = {"Content-Type": "application/json", "Authorization": f"Bearer {gw.key}", **(headers or {})}
    req = urllib.request.Request(gw.api + path, method=method, data=json.dumps(body or {}).encode(), headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=90) as resp:
            return resp.status, resp.headers, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, json.loads(exc.read() or b"null")


def chat_async(gw: GatewayProcess, content: str, session: str) -> "queue.Queue[Any]":
    out: "queue.Queue[Any]" = queue.Queue()

    def run() -> None:
        try:
            out.put(chat(gw, content, session))
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            out.put(exc)

    threading.Thread(target=run, daemon=True).start()
    return out


def workers() -> list[dict[str, Any]]:
    return list((read_status() or {}).get("workers") or [])


def worker_where(pred: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
    return wait_until(lambda: next((w for w in workers() if pred(w)), None), 60, what)


@pytest.fixture
def held(fake_provider: Any) -> threading.Event:
    """The provider answers at once, except a request whose last message is HOLD: that one waits
    for the test (so a turn stays in flight on one worker)."""
    release = threading.Event()

    def answer(body: dict) -> Any:
        last = _contents(body)[-1]
        if last == HOLD:
            release.wait(120)
        return text(f"answer to {last}")

    fake_provider.handler = answer
    yield release
    release.set()


def test_more_than_one_worker_on_sqlite_is_refused(hermes_home: Path) -> None:
    out = run_hermes("gateway", "run", "--api-server", "--workers", "2", env=hermes_env())
    assert out.returncode == 2 and "READY" not in out.stdout
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "PostgreSQL" in lines[0]
    assert "store.url" in lines[0] and "HERMES_DATABASE_URL" in lines[0] and "postgresql://" in lines[0]
    assert read_status() is None  # nothing started


def test_workers_on_an_unreachable_store_say_so_in_one_line(hermes_home: Path, pg_cluster: Any) -> None:
    url = pg_cluster.url(password="not-the-password-42")
    out = run_hermes("gateway", "run", "--api-server", "--workers", "2", env=hermes_env(HERMES_DATABASE_URL=url))
    assert out.returncode == 2 and "READY" not in out.stdout
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the session store" in lines[0]
    assert f"127.0.0.1:{pg_cluster.port}" in lines[0] and "not-the-password-42" not in out.stderr
    assert read_status() is None  # no worker was started


def test_worker_killed_mid_turn_loses_nothing_and_comes_back(hermes_home, fake_provider, held, pg_store,
                                                             gateway_process):
    gw = gateway_process("--workers", "2")
    assert [w["state"] for w in workers()] == ["running", "running"]
    session = f"kill-{uuid.uuid4().hex[:8]}"
    status, headers, _ = chat(gw, "first", session)
    assert status == 200
    sid = headers["X-Hermes-Session-Id"]
    pending = chat_async(gw, HOLD, session)
    wait_until(lambda: any(_contents(r)[-1] == HOLD for r in fake_provider.requests), 60, "the held turn")
    victim = worker_where(lambda w: (w.get("turns") or {}).get("in_flight"), "the worker running the turn")
    os.kill(victim["pid"], signal.SIGKILL)
    assert isinstance(pending.get(timeout=60), Exception)  # its client lost the connection
    # once the supervisor has reaped it, no new connection can land in the dead worker's listen queue
    worker_where(lambda w: w["index"] == victim["index"] and w["pid"] != victim["pid"], "the death noticed")

    # the next message of that session: served at once (the lease died with the worker's connection),
    # by whichever worker is alive, with every earlier message of the session in the request
    status, headers, body = chat(gw, "after the crash", session)
    assert status == 200 and body["choices"][0]["message"]["content"] == "answer to after the crash"
    assert headers["X-Hermes-Session-Id"] == sid
    seen = _contents(fake_provider.last_request)
    assert seen[:3] == ["first", "answer to first", HOLD] and seen[-1] == "after the crash"
    assert len(seen) == 5 and seen[3].startswith("(no reply")  # the dead turn's placeholder (turn_context)

    back = worker_where(lambda w: w["index"] == victim["index"] and w["pid"] != victim["pid"]
                        and w["state"] == "running", "the restarted worker")
    assert back["restarts"] == 1 and back["last_exit"] == "killed by SIGKILL"
    shown = run_hermes("gateway", "status", env=hermes_env())
    assert shown.returncode == 0
    assert f"worker {victim['index']}: running (pid {back['pid']})" in shown.stdout
    assert "restarts: 1 (last: killed by SIGKILL)" in shown.stdout


def test_sigterm_drains_the_turn_in_flight(hermes_home, fake_provider, held, pg_store, gateway_process):
    gw = gateway_process("--workers", "2")
    pending = chat_async(gw, HOLD, f"drain-{uuid.uuid4().hex[:8]}")
    wait_until(lambda: any(_contents(r)[-1] == HOLD for r in fake_provider.requests), 60, "the held turn")
    gw.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: (read_status() or {}).get("state") == "draining", 30, "the drain")
    held.set()
    status, _, body = pending.get(timeout=60)
    assert status == 200 and body["choices"][0]["message"]["content"] == f"answer to {HOLD}"
    assert gw.proc.wait(timeout=90) == 0
    assert read_status()["state"] == "stopped"


def test_telegram_poller_moves_to_another_worker_when_its_worker_dies(hermes_home, fake_provider, held,
                                                                       pg_store):
    (hermes_home / "config.yaml").write_text("gateway:\n  telegram:\n    election_interval: 0.3\n")
    fake = FakeTelegram().start()
    gw: Optional[GatewayProcess] = None
    try:
        gw = GatewayProcess(hermes_home, fake_provider.base_url, "--workers", "2", TELEGRAM_BOT_TOKEN=fake.token,
                            TELEGRAM_BASE_URL=fake.base_url, TELEGRAM_ALLOWED_USERS="1001")
        poller = worker_where(lambda w: w.get("telegram") == "polling", "a poller")
        worker_where(lambda w: w.get("telegram") == "standby", "a standby worker")
        first = fake.push_message(1001, 1001, "hello one")
        assert fake.wait_for_sent(1001, 1, timeout=60) == ["answer to hello one"]
        assert fake.wait_for(lambda: fake.confirmed > first, 30)  # acknowledged, as Telegram would see it
        assert fake.peak_pollers == 1  # the standby worker never polled

        # the standby worker sends too: a cron run it starts is delivered to the chat
        standby = worker_where(lambda w: w.get("telegram") == "standby", "the standby worker")
        status, _, job = api(gw, "POST", "/api/jobs", {"schedule": "every 1h", "prompt": "ping",
                                                       "deliver": "telegram:1001"})
        assert status == 201, job
        db = SessionDB()
        try:
            for _ in range(40):  # the kernel hands each new connection to either worker
                status, headers, started = api(gw, "POST", f"/api/jobs/{job['id']}/run")
                assert status == 202, started
                run = wait_until(lambda: (lambda r: r if r and r["status"] != "running" else None)(
                    db.get_cron_run(started["id"])), 60, "the run")
                if headers["X-Hermes-Worker"] == str(standby["pid"]):
                    break
            assert headers["X-Hermes-Worker"] == str(standby["pid"])
            assert (run["status"], run["delivery"]) == ("ok", "telegram:1001 ok")
        finally:
            db.close()
        assert any(t.startswith("⏰ ping") for t in fake.sent_texts(1001))
        sent_before = len(fake.sent_texts(1001))

        os.kill(poller["pid"], signal.SIGKILL)
        worker_where(lambda w: w.get("telegram") == "polling" and w["pid"] != poller["pid"], "a new poller")
        fake.push_message(1001, 1001, "hello two")
        sent = fake.wait_for_sent(1001, sent_before + 1, timeout=60)
        chat_replies = [t for t in sent if not t.startswith("⏰")]
        assert chat_replies == ["answer to hello one", "answer to hello two"]  # each once
        assert _contents(fake_provider.last_request) == ["hello one", "answer to hello one", "hello two"]
    finally:
        if gw is not None:
            gw.terminate_and_wait()
        fake.stop()


def test_a_worker_that_loses_its_lease_connection_writes_nothing_more(hermes_home, tmp_path, fake_provider,
                                                                      held, pg_store):
    """Issue 20 item 9: two gateway processes (two hosts: their own HERMES_HOME, one PostgreSQL
    store). Worker A's lock connection is terminated mid-turn, so B takes the session's lease and
    answers the next message while A's turn goes on. A's late reply must not land in the
    transcript: its commit is refused, its turn ends interrupted, the user's message is kept."""
    import psycopg

    from gateway.lease import lease_name

    (tmp_path / "b").mkdir()
    a = GatewayProcess(hermes_home, fake_provider.base_url, API_SERVER_KEY="worker-key-0123456789abcdef")
    b = GatewayProcess(tmp_path / "b", fake_provider.base_url, API_SERVER_KEY="worker-key-0123456789abcdef")
    try:
        session = f"fence-{uuid.uuid4().hex[:8]}"
        pending = chat_async(a, HOLD, session)
        wait_until(lambda: any(_contents(r)[-1] == HOLD for r in fake_provider.requests), 60, "A's turn")
        with SessionDB(url=pg_store) as db:
            sid = db.get_session_for_key(f"api_server:session:{session}")
        with psycopg.connect(pg_store, autocommit=True) as admin:
            (pid,) = admin.execute(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND"
                " classid::bigint = ((hashtextextended(%s, 0) >> 32) & 4294967295) AND"
                " objid::bigint = (hashtextextended(%s, 0) & 4294967295)",
                (lease_name(sid), lease_name(sid))).fetchone()
            terminate_backend(admin, pid)

        status, headers, body = chat(b, "while A is stuck", session)  # B gets the lease at once
        assert status == 200 and headers["X-Hermes-Session-Id"] == sid
        seen = _contents(fake_provider.last_request)
        assert seen[0] == HOLD and seen[-1] == "while A is stuck"  # A's message was kept
        held.set()
        status, _, body = pending.get(timeout=60)
        assert status == 503 and body["error"]["code"] == "interrupted"
        with SessionDB(url=pg_store) as db:
            stored = [m["content"] for m in db.get_active_messages(sid) if m["role"] in ("user", "assistant")]
        assert stored[0] == HOLD and stored[-2:] == ["while A is stuck", "answer to while A is stuck"]
        assert f"answer to {HOLD}" not in stored  # A's late reply was refused
        # A's next turn of the session takes a fresh lease and sees B's exchange
        status, _, body = chat(a, "back on A", session)
        assert status == 200
        seen = _contents(fake_provider.last_request)
        assert seen[-3:] == ["while A is stuck", "answer to while A is stuck", "back on A"]
        assert f"answer to {HOLD}" not in seen
    finally:
        held.set()
        for gw in (a, b):
            gw.terminate_and_wait()
