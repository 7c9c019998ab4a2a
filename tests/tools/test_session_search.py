"""session_search over a real SQLite FTS5 store and a real PostgreSQL, and through a real AIAgent with the loopback provider."""
from __future__ import annotations

import pytest

from hermes_state import SessionDB
from tests.conftest import write_config
from tests.fake_provider import text, tool_calls
from tests.test_compression_e2e import SUMMARY, is_summary_request
from tools.registry import ToolContext, ToolError, dispatch


@pytest.fixture
def db(store):  # on SQLite (FTS5) and on PostgreSQL (tsvector)
    return store


def session(db, source="cli", parent=None, title=None, *texts):
    sid = db.create_session(source=source, parent_session_id=parent, title=title)
    msgs = []
    for i, t in enumerate(texts):
        msgs.append({"role": "user" if i % 2 == 0 else "assistant", "content": t})
    db.append_messages(sid, msgs)
    return sid


def search(db, current=None, **args):
    return dispatch("session_search", args, ToolContext(cwd=".", session_db=db, session_id=current))


def test_query_finds_sessions_newest_first_with_context(db):
    old = session(db, "cli", None, "Old talk", "we chose postgres for the billing service", "ok, postgres")
    new = session(db, "telegram", None, "New talk", "hello", "sure", "is billing on postgres?", "yes")
    hits, more = db.search_sessions("postgres billing")
    assert [h["session_id"] for h in hits] == [new, old] and not more
    assert "»postgres«" in hits[0]["snippet"] or "»billing«" in hits[0]["snippet"]
    hits, _ = db.search_sessions("postgres billing", sort="oldest")
    assert hits[0]["session_id"] == old
    out = search(db, query="postgres billing")
    assert out.index(new) < out.index(old) and '"New talk" · telegram' in out
    assert "[3 user]" not in out or "is billing on postgres?" in out
    assert "sure" in out  # a message around the match comes along


def test_subagent_and_cron_sessions_only_when_asked(db):
    parent = session(db, "cli", None, None, "the secret word is zebra")
    child = session(db, "subagent", parent, None, "subagent saw zebra")
    cron = session(db, "cron", None, None, "cron job zebra report")
    forked = session(db, "cli", parent, None, "a child session zebra")
    assert [h["session_id"] for h in db.search_sessions("zebra", limit=10)[0]] == [parent]
    everyone = {h["session_id"] for h in db.search_sessions("zebra", limit=10, include_children=True)[0]}
    assert everyone == {parent, child, cron, forked}
    assert [r["id"] for r in db.recent_sessions(10)[0]] == [parent]
    assert "include_subagents=true" in search(db, query="nothing-like-this")


def test_paging_says_how_to_get_more(db):
    sids = [session(db, "cli", None, None, f"widget number {i}") for i in range(7)]
    out = search(db, query="widget", limit=3)
    assert "more: offset=3" in out and sids[6] in out and sids[3] not in out
    out = search(db, query="widget", limit=3, offset=3)
    assert sids[3] in out and "more: offset=6" in out
    out = search(db, query="widget", limit=3, offset=6)
    assert sids[0] in out and "more:" not in out
    assert "No more sessions match" in search(db, query="widget", offset=7)


@pytest.mark.parametrize("query", ['"foo', "AND OR", "foo AND", "NEAR(", "*", "(((", "a:b", "'", "-x",
                                   "\x00", "ünïcödé \"half"])
def test_bad_fts_syntax_gives_a_safe_result(db, query):
    session(db, "cli", None, None, "foo bar baz ünïcödé", "reply")
    hits, _ = db.search_sessions(query)
    assert isinstance(hits, list)
    out = search(db, query=query)
    assert isinstance(out, str) and out
    if query in ('"foo', "foo AND"):
        assert hits  # quoted as plain words, the term still matches


def test_output_is_bounded_for_huge_sessions(db):
    sids = [session(db, "cli", None, None, *[f"needle haystack {i}-{j} " + "hay " * 2000 for j in range(6)])
            for i in range(10)]
    out = search(db, query="needle", limit=10)
    assert len(out) <= 8000
    listed = [sid for sid in sids if sid in out]
    assert listed and out.rstrip().endswith(")")
    if len(listed) < 10:
        assert f"more: offset={len(listed)}" in out


def test_session_mode_and_window_mode(db):
    sid = session(db, "cli", None, "Long one", *[f"message number {i}" for i in range(30)])
    out = search(db, session_id=sid)
    assert "message number 0" in out and "message number 29" in out and "message number 15" not in out
    assert "30 messages" in out and "… 22 messages …" in out
    rows = db.get_messages(sid)
    mid = rows[15]["id"]
    out = search(db, session_id=sid, around_message_id=mid)
    assert "message number 15" in out and "message number 11" in out and "message number 20" in out
    assert "message number 5" not in out and f"earlier: around_message_id={rows[11]['id']}" in out


@pytest.mark.parametrize("args, fragment", [
    ({"session_id": "nope"}, "no session 'nope'"),
    ({"around_message_id": 3}, "needs the session_id"),
    ({"limit": 0, "query": "x"}, "limit must be 1-10"),
    ({"limit": 11}, "limit must be 1-10"),
    ({"offset": -1}, "offset must be"),
    ({"query": "x", "sort": "random"}, "must be one of"),
])
def test_bad_arguments_are_clear_errors(db, args, fragment):
    with pytest.raises(ToolError, match=fragment):
        search(db, **args)


def test_window_on_a_message_of_another_session_is_an_error(db):
    a = session(db, "cli", None, None, "alpha")
    b = session(db, "cli", None, None, "beta")
    with pytest.raises(ToolError, match=f"session {a} has no message"):
        search(db, session_id=a, around_message_id=db.get_messages(b)[0]["id"])


def test_recent_sessions_without_arguments(db, tmp_path):
    a = session(db, "cli", None, "First", "hello there")
    b = session(db, "api_server", None, None, "second chat")
    out = search(db, current=a)
    assert "(this session)" in out
    assert out.index(b) < out.index(a) and '"First"' in out and "hello there" in out
    assert "No sessions yet." == search(SessionDB(tmp_path / "empty.db"))


def test_compacted_detail_is_recovered_through_a_real_turn(make_agent, fake_provider, hermes_home):
    """A session is compacted (the summary drops a detail), then the model searches for it."""
    write_config(hermes_home, "model:\n  context_length: 8000\n"
                              "compression:\n  protect_first_n: 1\n  protect_last_n: 2\n")
    script = [text("hi"), text("noted")] + [text(f"answer {i}") for i in range(4)]
    script += [tool_calls([("session_search", {"query": "tangerine"})]), text("It is tangerine-42.")]
    fake_provider.handler = lambda body: text(SUMMARY) if is_summary_request(body) else script.pop(0)
    agent = make_agent()  # at an 8k window the default agent gets the compact core: it has session_search
    agent.run_conversation("hello")
    agent.run_conversation("The staging database password hint is 'tangerine-42'. " + "context " * 300)
    for i in range(4):
        agent.run_conversation(f"filler {i} " + "words " * 400)
    if agent.compactions == 0:
        assert agent.compress()["compressed"]
    live = " ".join(str(m.get("content")) for m in agent.messages)
    assert "tangerine-42" not in live  # the summary dropped it
    res = agent.run_conversation("What was the staging password hint?")
    assert res["final_response"] == "It is tangerine-42."
    chat = [b for b in fake_provider.requests if not is_summary_request(b)]
    result = [m["content"] for m in chat[-1]["messages"] if m["role"] == "tool"][-1]
    assert "tangerine-42" in result and agent.session_id in result
    assert "compacted of this session: replaced by a summary, not in the live context" in result
    offered = [t["function"]["name"] for t in chat[-1]["tools"]]
    assert "session_search" in offered and "todo" not in offered  # the compact core
