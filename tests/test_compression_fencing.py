"""One lock holder, fenced commits (issue 15, item 3): a compaction whose lease was lost changes nothing,
and a holder on another host is never judged dead by its pid here."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import pytest

import hermes_state
from agent.conversation_compression import LOCK_LOST_WARNING, LeaseRefresher, lock_holder
from hermes_state import SessionDB
from tests.fake_provider import error_413, text
from tests.test_compression_e2e import SUMMARY, is_summary_request, seeded_session

THIEF = "pid=1:tid=1:agent=beef:nonce=00000000:host=another-box"


@pytest.mark.parametrize("how", ["expired and taken over", "deleted"])
@pytest.mark.usefixtures("configured_store")  # SQLite and PostgreSQL
def test_a_lease_lost_during_the_summary_discards_the_compaction(make_agent, fake_provider, how):
    sid = seeded_session(10, size=300)
    asked, release = threading.Event(), threading.Event()

    def reply(body):
        if is_summary_request(body):
            asked.set()
            release.wait(60)
            return text(SUMMARY)
        return text("ok")

    fake_provider.handler = reply
    warnings: list[str] = []
    agent = make_agent(session_id=sid, status_callback=lambda kind, msg: warnings.append(msg))
    db = SessionDB()
    rows_before = db.get_messages(sid, include_inactive=True)
    done: dict = {}
    worker = threading.Thread(target=lambda: done.update(agent.compress()))
    worker.start()
    try:
        assert asked.wait(60), "the summary was never requested"
        holder = db.get_compression_lock_holder(sid)
        assert holder is not None and f"pid={os.getpid()}:" in holder
        if how == "deleted":
            assert db.release_compression_lock(sid, holder)
        else:  # the lease ran out (a stalled process) and another process took the lock
            assert db.refresh_compression_lock(sid, holder, ttl_seconds=-1)
            assert db.get_compression_lock_holder(sid) is None
            assert db.try_acquire_compression_lock(sid, THIEF)
    finally:
        release.set()
        worker.join(60)
    assert done["compressed"] is False and done["deferred"] is True
    assert LOCK_LOST_WARNING in warnings
    assert db.get_messages(sid, include_inactive=True) == rows_before  # the store is unchanged
    assert db.get_session(sid)["compactions"] == 0 and agent.compactions == 0
    assert agent.messages == db.get_active_messages(sid)  # and so is the history in memory
    assert db.get_compression_lock_holder(sid) == (THIEF if how != "deleted" else None)
    assert agent.run_conversation("still here?")["completed"]  # the session goes on normally


@pytest.mark.usefixtures("configured_store")  # SQLite and PostgreSQL
def test_a_lease_lost_during_a_413_compaction_defers_the_turn(make_agent, fake_provider):
    """Losing the lease is lock contention, not exhaustion: the turn is deferred, the session kept."""
    sid = seeded_session(10, size=300)
    asked, release = threading.Event(), threading.Event()

    def reply(body):
        if is_summary_request(body):
            asked.set()
            release.wait(60)
            return text(SUMMARY)
        return error_413()

    fake_provider.handler = reply
    agent = make_agent(session_id=sid)
    db = SessionDB()
    before = db.get_active_messages(sid)
    done: dict = {}
    worker = threading.Thread(target=lambda: done.update(agent.run_conversation("hello?")))
    worker.start()
    try:
        assert asked.wait(60), "the summary was never requested"
        holder = db.get_compression_lock_holder(sid)
        assert db.refresh_compression_lock(sid, holder, ttl_seconds=-1)
        assert db.try_acquire_compression_lock(sid, THIEF)
    finally:
        release.set()
        worker.join(60)
    assert done["compression_deferred"] is True and done["compression_exhausted"] is False
    assert done["failed"] is False
    assert db.get_active_messages(sid) == before + [{"role": "user", "content": "hello?"}]
    assert db.get_session(sid)["compactions"] == 0


@pytest.mark.usefixtures("configured_store")  # SQLite and PostgreSQL
def test_the_lease_refresher_notices_a_lost_lock(hermes_home):
    db = SessionDB()
    sid = db.create_session()
    me = "pid=2:tid=1:agent=ab:nonce=11111111:host=" + hermes_state.machine_id()
    assert db.try_acquire_compression_lock(sid, me, ttl_seconds=1)
    with LeaseRefresher(db, sid, me, ttl=300, every=0.01) as lease:
        assert not lease.lost.is_set()
        assert db.release_compression_lock(sid, me)  # someone removed our row
        assert lease.lost.wait(30)
    assert db.get_compression_lock_holder(sid) is None  # a lost lease is never re-created


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_holder_names_its_host_and_machine_id_is_honoured(make_agent, monkeypatch):
    agent = make_agent()
    assert lock_holder(agent).endswith(f":host={socket.gethostname()}")
    monkeypatch.setenv("HERMES_MACHINE_ID", "box:7 a")
    holder = lock_holder(agent)
    assert holder.startswith(f"pid={os.getpid()}:") and holder.endswith(":host=box_7_a")
    assert hermes_state.machine_id() == "box_7_a"


@pytest.mark.usefixtures("configured_store")  # SQLite and PostgreSQL
def test_a_dead_pid_on_another_host_is_never_reclaimed(hermes_home, monkeypatch):
    dead = _dead_pid()
    db = SessionDB()
    me = f"pid={os.getpid()}:tid=1:agent=ab:nonce=22222222:host={hermes_state.machine_id()}"
    elsewhere = f"pid={dead}:tid=1:agent=cd:nonce=33333333:host=another-box"
    assert db.try_acquire_compression_lock("s", elsewhere)
    assert hermes_state.holder_is_dead(elsewhere) is False
    assert db.get_compression_lock_holder("s") == elsewhere
    assert db.try_acquire_compression_lock("s", me) is False  # waits for the lease, never steals it

    # HERMES_MACHINE_ID is this host's identity: the hostname alone no longer makes a pid ours to judge
    monkeypatch.setenv("HERMES_MACHINE_ID", "container-7")
    same_hostname = f"pid={dead}:tid=1:agent=ef:nonce=44444444:host={socket.gethostname()}"
    assert hermes_state.holder_is_dead(same_hostname) is False
    assert db.try_acquire_compression_lock("t", same_hostname)
    assert db.try_acquire_compression_lock("t", me) is False
    ours = f"pid={dead}:tid=1:agent=ef:nonce=55555555:host=container-7"
    assert hermes_state.holder_is_dead(ours) is True
    assert db.try_acquire_compression_lock("u", ours)
    assert db.try_acquire_compression_lock("u", me) is True  # a dead holder here is reclaimed at once
    # a holder without host= (the seed's format) is judged by its pid on this host, as before
    assert hermes_state.holder_is_dead(f"pid={dead}:tid=1:agent=deadbeef:nonce=abcd1234") is True
    assert hermes_state.holder_is_dead(f"pid={os.getpid()}:tid=1:agent=deadbeef:nonce=abcd1234") is False
