"""A turn is one hand-off from the event loop to a turn thread (issue 28): the store's mark, the
agent (made when the session has none) and the conversation all run on that thread, where each
used to be a hop of its own (a default-executor thread for the mark, a turn thread for the agent,
another for the turn)."""
from __future__ import annotations

import threading
from typing import Any


def test_mark_agent_and_turn_run_on_one_turn_thread(make_gateway):
    seen: list[tuple[str, str]] = []

    def wrap(real: Any) -> Any:
        def make(**kw: Any) -> Any:
            seen.append(("agent", threading.current_thread().name))
            agent = real(**kw)
            run = agent.run_conversation

            def run_conversation(*a: Any, **k: Any) -> Any:
                seen.append(("turn", threading.current_thread().name))
                return run(*a, **k)

            agent.run_conversation = run_conversation
            return agent
        return make

    gw = make_gateway(wrap_factory=wrap)
    mark = gw.runner.sessions.mark

    def marked(sid: str) -> int:
        seen.append(("mark", threading.current_thread().name))
        return mark(sid)

    gw.runner.sessions.mark = marked
    for text in ("first", "second"):  # a new session, then its cached agent
        outcome = gw.call(gw.runner.run_turn("api_server:hops", text))
        assert outcome.kind == "ok", outcome
    first, second = seen[:2], seen[2:]
    assert [k for k, _ in first] == ["agent", "turn"]  # made here just now: no mark to read
    assert [k for k, _ in second] == ["mark", "turn"]  # the cached agent
    for hop in (first, second):
        names = {name for _, name in hop}
        assert len(names) == 1 and names.pop().startswith("turn_"), hop


def test_a_session_made_elsewhere_reads_its_mark_and_agent_on_the_turn_thread(make_gateway):
    """A session this process did not just make may hold rows: mark, agent and turn, one hop."""
    seen: list[tuple[str, str]] = []
    gw = make_gateway()
    sid = gw.db.create_session(source="api_server")
    gw.db.bind_session_key("api_server:elsewhere", sid)
    mark, factory = gw.runner.sessions.mark, gw.runner.agent_factory

    def marked(s: str) -> int:
        seen.append(("mark", threading.current_thread().name))
        return mark(s)

    def made(**kw: Any) -> Any:
        seen.append(("agent", threading.current_thread().name))
        return factory(**kw)

    gw.runner.sessions.mark, gw.runner.agent_factory = marked, made
    outcome = gw.call(gw.runner.run_turn("api_server:elsewhere", "hello"))
    assert outcome.kind == "ok", outcome
    assert [k for k, _ in seen] == ["mark", "agent"]
    assert len({name for _, name in seen}) == 1 and seen[0][1].startswith("turn_")
