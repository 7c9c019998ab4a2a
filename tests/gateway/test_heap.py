"""The gateway's collector policy (gateway/heap.py): full collections on a clock, start-up frozen.
The real collector is used; nothing is timed."""
from __future__ import annotations

import gc
import weakref

from typing import Any

from gateway.heap import (BUSY_FULL_SECONDS, FULL_SECONDS, NEVER, YOUNG_BEFORE_FULL, HeapPolicy,
                          full_collection_due)
from tests.fake_provider import text


def test_a_full_collection_is_due_only_after_young_ones_and_the_interval() -> None:
    assert full_collection_due(100.0, 0.0, YOUNG_BEFORE_FULL)
    assert not full_collection_due(100.0, 0.0, YOUNG_BEFORE_FULL - 1)  # a quiet gateway: no scan
    assert not full_collection_due(FULL_SECONDS - 1, 0.0, 50)  # a burst: not again so soon
    assert full_collection_due(FULL_SECONDS, 0.0, 50)
    # turns in flight: the pause would land on them, so it waits longer
    assert not full_collection_due(FULL_SECONDS, 0.0, 50, busy=True)
    assert full_collection_due(BUSY_FULL_SECONDS, 0.0, 50, busy=True)


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_tick_frees_a_cycle_when_due_and_leaves_it_otherwise() -> None:
    policy = HeapPolicy()
    gc.collect()
    node = Node()
    alive = weakref.ref(node)
    del node
    assert policy.tick(now=1.0, young=YOUNG_BEFORE_FULL) is False  # less than the interval after 0
    assert alive() is not None
    assert policy.tick(now=FULL_SECONDS + 1, young=YOUNG_BEFORE_FULL) is True
    assert alive() is None
    report = policy.report()
    assert report["full_collections"] == 1 and report["freed_by_full"] >= 1
    assert policy.tick(now=FULL_SECONDS + 2, young=YOUNG_BEFORE_FULL) is False  # just ran


def test_settle_freezes_start_up_and_release_puts_the_collector_back() -> None:
    before = gc.get_threshold()
    policy = HeapPolicy()
    policy.settle()
    try:
        assert gc.get_freeze_count() > 1000 and policy.report()["frozen_objects"] > 1000
        assert gc.get_threshold() == (before[0], before[1], NEVER)
        assert policy.report()["settled"] is True
    finally:
        policy.release()
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    assert policy.report()["settled"] is False
    policy.release()  # twice is harmless
    assert gc.get_threshold() == before


def test_a_dropped_agent_is_freed_without_the_cycle_collector(
        hermes_home: Any, fake_provider: Any, make_agent: Any) -> None:
    """Full collections are rare now (above): an agent that had a turn, was closed and dropped
    must go with its reference count, not wait for one."""
    from hermes_state import SessionDB

    fake_provider.queue(text("hello there"))
    db = SessionDB(str(hermes_home / "state.db"))
    gc.collect()
    gc.disable()
    try:
        agent = make_agent(session_db=db)
        assert agent.run_conversation("hi")["final_response"] == "hello there"
        sid = agent.session_id
        alive = weakref.ref(agent)
        agent.close()
        del agent
        assert alive() is None
    finally:
        gc.enable()
        db.close()
    kept = SessionDB(str(hermes_home / "state.db")).get_messages(sid)
    assert [m["content"] for m in kept] == ["hi", "hello there"]  # and the turn was kept
