"""The turn lease (gateway.lease) between two gateway runners sharing one PostgreSQL store, in one
test process: each runner takes its leases on connections of its own, exactly as two worker
processes would, so the cross-process rules are pinned here without starting processes."""
from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
import uuid
from typing import Any

import pytest

from gateway.lease import TurnLeases, lease_name
from tests.fake_provider import text
from tests.postgres import terminate_backend

KEY = "X-Hermes-Session-Key"


def _contents(body: dict) -> list[str]:
    return [m.get("content") for m in body["messages"] if m.get("role") in ("user", "assistant")]


def post(gw: Any, content: str, session: str, path: str = "/chat/completions",
         method: str = "POST") -> tuple[int, Any, Any]:
    data = json.dumps({"model": "m", "messages": [{"role": "user", "content": content}]}).encode()
    url = gw.base_url.rsplit("/v1", 1)[0] + path if path.startswith("/api/") else gw.base_url + path
    req = urllib.request.Request(url, method=method, data=data if method == "POST" else None,
                                 headers={"Content-Type": "application/json", KEY: session,
                                          "Authorization": f"Bearer {gw.api_key}"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.headers, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, json.loads(exc.read() or b"null")


def test_two_runners_take_turns_and_each_sees_the_others_exchanges(make_gateway, provider_env, pg_store):
    a, b = make_gateway(api=True), make_gateway(api=True)
    assert a.runner.leases.shared and b.runner.leases.shared
    session = f"shared-{uuid.uuid4().hex[:8]}"
    guard = threading.Lock()
    active, overlaps = [0], []

    def handler(body: dict) -> Any:
        with guard:
            active[0] += 1
            if active[0] > 1:
                overlaps.append(_contents(body)[-1])
        time.sleep(0.3)  # room for the other runner's turn to arrive, if the lease let it
        with guard:
            active[0] -= 1
        return text("answer to " + _contents(body)[-1])

    provider_env.handler = handler
    status, headers, _ = post(a, "one", session)
    assert status == 200
    sid = headers["X-Hermes-Session-Id"]
    results: list[tuple[int, Any, Any]] = []
    threads = [threading.Thread(target=lambda gw=gw, c=c: results.append(post(gw, c, session)))
               for gw, c in ((a, "two via a"), (b, "two via b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert [r[0] for r in results] == [200, 200] and overlaps == []
    assert {r[1]["X-Hermes-Session-Id"] for r in results} == {sid}
    # whichever ran last, runner a's cached agent missed an exchange of b's: it reloads the transcript
    assert post(a, "three", session)[0] == 200
    seen = _contents(provider_env.last_request)
    for said in ("one", "answer to one", "two via a", "answer to two via a", "two via b",
                 "answer to two via b", "three"):
        assert said in seen
    assert len(seen) == 7  # nothing twice


def test_a_runner_alone_on_a_session_keeps_its_agent_turn_after_turn(make_gateway, provider_env,
                                                                      pg_store, caplog):
    """Where the store stands after our turn is known without reading it (the agent's highest
    row id): with nobody else writing, the cached agent is never reloaded; one other write is
    noticed at the next turn."""
    gw = make_gateway(api=True)
    session = f"alone-{uuid.uuid4().hex[:8]}"
    caplog.set_level("INFO", logger="gateway")
    _, headers, _ = post(gw, "one", session)
    sid = headers["X-Hermes-Session-Id"]
    for said in ("two", "three"):
        assert post(gw, said, session)[0] == 200
    assert "reloading its transcript" not in caplog.text
    gw.db.append_message(sid, "user", "written by another worker")
    assert post(gw, "four", session)[0] == 200
    assert "reloading its transcript" in caplog.text
    assert "written by another worker" in _contents(provider_env.last_request)


def test_key_position_reads_the_binding_and_the_top_row_at_once(store):
    sid = store.create_session()
    assert store.key_position("api_server:k", sid) == (None, 0)
    store.bind_session_key("api_server:k", sid)
    top = store.append_messages(sid, [{"role": "user", "content": "a"},
                                      {"role": "assistant", "content": "b"}])[-1]
    assert store.key_position("api_server:k", sid) == (sid, top)


def test_a_session_busy_elsewhere_past_the_wait_is_refused_with_409(make_gateway, provider_env, pg_store):
    gw = make_gateway(api=True, runner_options={"lease_wait": 0.5})
    session = f"busy-{uuid.uuid4().hex[:8]}"
    provider_env.queue(text("first answer"))
    status, headers, _ = post(gw, "first", session)
    assert status == 200
    sid = headers["X-Hermes-Session-Id"]
    calls = len(provider_env.requests)
    with gw.db.advisory_lock(lease_name(sid), wait=0) as got:  # "another worker" runs a turn of it
        assert got
        status, headers, body = post(gw, "while busy", session)
        assert status == 409 and body["error"]["code"] == "session_busy"
        assert "another gateway worker" in body["error"]["message"] and headers["Retry-After"]
        status, _, body = post(gw, "", session, path=f"/api/sessions/{sid}", method="DELETE")
        assert status == 409 and body["error"]["code"] == "session_busy"
    assert len(provider_env.requests) == calls  # the refused turn never reached the provider
    provider_env.queue(text("second answer"))
    status, _, body = post(gw, "after", session)
    assert status == 200 and body["choices"][0]["message"]["content"] == "second answer"
    assert "while busy" not in _contents(provider_env.last_request)  # the refused message was not stored


def test_the_lease_is_free_again_when_the_turn_ends(make_gateway, provider_env, pg_store):
    gw = make_gateway(api=True)
    session = f"free-{uuid.uuid4().hex[:8]}"
    provider_env.queue(text("done"))
    status, headers, _ = post(gw, "hello", session)
    assert status == 200
    with gw.db.advisory_lock(lease_name(headers["X-Hermes-Session-Id"]), wait=0) as got:
        assert got


def test_sqlite_takes_no_lease_and_bad_wait_settings_are_refused():
    from hermes_core.config import ConfigError, parse_config
    from hermes_state import SessionDB

    db = SessionDB()
    try:
        assert TurnLeases(db).shared is False
    finally:
        db.close()
    def lease_wait(section: dict) -> float:  # what the runner is given (gateway.process)
        return parse_config({"gateway": section}).gateway.turn_lease_wait

    assert lease_wait({}) == 300.0 and lease_wait({"turn_lease_wait": "2.5"}) == 2.5
    for junk in ("soon", -1, None):  # refused when config.yaml is read, in one line
        with pytest.raises(ConfigError, match="turn_lease_wait"):
            lease_wait({"turn_lease_wait": junk})


def test_a_chat_message_for_a_session_busy_elsewhere_gets_a_busy_reply(make_gateway, fake_telegram, provider_env,
                                                                        pg_store, monkeypatch):
    monkeypatch.setenv("TELEGRAM_ALLOWED_USERS", "1001")
    gw = make_gateway(telegram=fake_telegram, runner_options={"lease_wait": 0.3})
    provider_env.queue(text("hello back"))
    fake_telegram.push_message(1001, 1001, "hello")
    assert fake_telegram.wait_for_sent(1001) == ["hello back"]
    sid = gw.session_for("telegram:dm:1001")
    # "another worker" takes the lease once the first turn gives it back (just after its reply)
    with gw.db.advisory_lock(lease_name(sid), wait=5) as got:
        assert got
        fake_telegram.push_message(1001, 1001, "are you there")
        sent = fake_telegram.wait_for_sent(1001, 2)
    assert len(sent) == 2 and "another gateway worker" in sent[1] and "send the message again" in sent[1]
    assert len(provider_env.requests) == 1


def test_after_a_database_restart_the_next_turn_works(make_gateway, provider_env, pg_store, pg_cluster):
    gw = make_gateway(api=True)
    session = f"restart-{uuid.uuid4().hex[:8]}"
    provider_env.queue(text("before"), text("after"))
    assert post(gw, "one", session)[0] == 200  # leaves a lock connection and pooled ones behind
    pg_cluster.restart()  # every connection of the gateway is dropped by the server
    status, _, body = post(gw, "two", session)
    assert status == 200 and body["choices"][0]["message"]["content"] == "after"
    assert _contents(provider_env.last_request) == ["one", "before", "two"]


def test_a_fenced_write_is_refused_once_the_lock_connection_died(pg_url):
    """The store side of issue 20 item 9: ``lock_fence`` is checked inside the write's transaction."""
    import psycopg

    from hermes_state import LeaseLost, SessionDB

    db = SessionDB(url=pg_url)
    try:
        assert db.lock_fence(lease_name("s1")) is None  # not held here
        with db.advisory_lock(lease_name("s1"), wait=0) as got:
            assert got
            fence = db.lock_fence(lease_name("s1"))
            db.append_messages("s1", [{"role": "user", "content": "while held"}], fence=fence)
            with psycopg.connect(pg_url, autocommit=True) as admin:
                terminate_backend(admin, fence.pid)
            with pytest.raises(LeaseLost):
                db.append_messages("s1", [{"role": "assistant", "content": "too late"}], fence=fence)
            with pytest.raises(LeaseLost):
                db.replace_active_messages("s1", [{"role": "user", "content": "x"}], [], fence=fence)
        assert [m["content"] for m in db.get_messages("s1")] == ["while held"]
    finally:
        db.close()
    with SessionDB() as local:
        assert local.lock_fence(lease_name("s1")) is None  # SQLite: one process, nothing to fence


def test_the_first_read_under_a_lease_runs_while_it_is_held_and_a_failed_one_gives_it_back(pg_url):
    """``TurnLeases.take(then=)``: the read runs on the lease's thread with the lease held (another
    connection cannot take it meanwhile); a read that fails gives the lease back at once."""
    import asyncio

    import psycopg

    from hermes_state import SessionDB

    try_lock = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
    with SessionDB(url=pg_url) as db, psycopg.connect(pg_url, autocommit=True) as other:
        leases = TurnLeases(db, wait=0)
        seen: list[bool] = []

        def read() -> None:
            seen.append(other.execute(try_lock, (lease_name("s1"),)).fetchone()[0])

        def failing_read() -> None:
            raise RuntimeError("the read failed")

        async def turns() -> None:
            held = await leases.take("s1", then=read)
            await leases.release(held)
            with pytest.raises(RuntimeError, match="the read failed"):
                await leases.take("s1", then=failing_read)
            held = await leases.take("s1")  # given back: free at once, no wait allowed
            await leases.release(held)

        try:
            asyncio.run(turns())
        finally:
            leases.close()
        assert seen == [False]  # held by our lease while the read ran
        assert other.execute(try_lock, (lease_name("s1"),)).fetchone()[0] is True  # free now
