"""Compression inside real turns: loopback provider over HTTP, real SQLite, real summary calls."""
from __future__ import annotations

import json

import pytest

from hermes_state import SessionDB
from tests.conftest import write_config
from tests.fake_provider import (check_well_formed, error, estimate_prompt_tokens, garbage, overflow, server_error,
                                 slow, text, tool_calls, window_limited)

SUMMARY = ("## Goal\nKeep chatting.\n## Constraints and preferences\nNone\n## Completed actions\nMany turns.\n"
           "## Current state\nOngoing.\n## Key decisions\nNone\n## Relevant files\nNone\n"
           "## Open questions\nNone\n## Next steps\nContinue.")


def is_summary_request(body: dict) -> bool:
    first = body["messages"][0]
    return first["role"] == "system" and "hand-off notes" in str(first.get("content"))


def chat_requests(fp) -> list[dict]:
    return [b for b in fp.requests if not is_summary_request(b)]


def summary_requests(fp) -> list[dict]:
    return [b for b in fp.requests if is_summary_request(b)]


def all_contents(session_id: str) -> list[str]:
    return [r["content"] for r in SessionDB().get_messages(session_id, include_inactive=True)
            if isinstance(r["content"], str)]


def test_300_turns_at_an_8k_window_never_lose_a_message(make_agent, fake_provider, hermes_home):
    write_config(hermes_home, "model:\n  context_length: 8000\n")
    turn = {"n": 0}

    def reply(body):
        if is_summary_request(body):
            return text(SUMMARY)
        last = body["messages"][-1]
        if last["role"] == "user" and turn["n"] % 4 == 0:
            return tool_calls([("todo", {"todos": [{"id": "1", "content": "step", "status": "pending"}]})])
        return text("Answer: " + "details " * 40)

    fake_provider.handler = reply
    warnings = []
    agent = make_agent(status_callback=lambda kind, msg: warnings.append((kind, msg)))
    for i in range(300):
        turn["n"] = i
        result = agent.run_conversation(f"user message {i}: " + "please consider this request " * 12)
        assert result["completed"], (i, result.get("error"))
    window = agent.context_compressor.context_length
    for body in fake_provider.requests:
        assert check_well_formed(body) == [], check_well_formed(body)
        assert estimate_prompt_tokens(body) <= window
    assert agent.compactions >= 5
    assert [k for k, _ in warnings if k == "warning"] == []
    stored = "\n".join(all_contents(agent.session_id))
    missing = [i for i in range(300) if f"user message {i}:" not in stored]
    assert missing == []
    summaries = [m for m in agent.messages if "CONTEXT SUMMARY" in str(m.get("content"))]
    assert len(summaries) == 1  # folded, never nested


def seeded_session(turns: int, size: int) -> str:
    """A stored session of ``turns`` user/assistant pairs, written straight to the store."""
    msgs = []
    for i in range(turns):
        msgs += [{"role": "user", "content": f"filler {i} " + "x" * size},
                 {"role": "assistant", "content": f"ack {i}"}]
    with SessionDB() as db:  # closed here: a connection left to the garbage collector would
        sid = db.create_session(source="cli")  # checkpoint its WAL whenever it is collected
        db.append_messages(sid, msgs)
    return sid


def _fill(agent, turns: int, size: int = 1000) -> None:
    for i in range(turns):
        assert agent.run_conversation(f"filler {i} " + "x" * size)["completed"]


def test_413_until_the_request_shrinks_recovers(make_agent, fake_provider, hermes_home):
    agent = make_agent()
    _fill(agent, 30)
    big = len(fake_provider.raw_requests[-1])

    def reply(body, raw=None):
        if is_summary_request(body):
            return text(SUMMARY)
        return error(413, "Request entity too large") if len(raw) > big // 2 else text("fits now")

    reply.wants_raw = True
    fake_provider.handler = reply
    result = agent.run_conversation("and now?")
    assert result["completed"] and result["final_response"] == "fits now", result.get("error")
    assert agent.compactions == 1
    assert len(fake_provider.raw_requests[-1]) <= big // 2
    stored = "\n".join(all_contents(agent.session_id))
    assert all(f"filler {i} " in stored for i in range(30))


def test_context_overflow_teaches_the_real_limit(make_agent, fake_provider, hermes_home):
    # a few tools: at a 3,000-token window the history, not the fixed prompt (every default
    # toolset is ~2,600 tokens), must be what compression can shrink
    agent = make_agent(enabled_toolsets=["terminal", "file"])
    _fill(agent, 30, size=600)
    limit = 3000
    overflows = []

    def reply(body):
        if is_summary_request(body):
            return text(SUMMARY)
        n = estimate_prompt_tokens(body)
        if n > limit:
            overflows.append(n)
            return overflow(n, limit)
        return text("short enough")

    fake_provider.handler = reply
    result = agent.run_conversation("next")
    assert result["completed"] and result["final_response"] == "short enough"
    assert agent.context_compressor.context_length == limit
    # the learned limit is used from then on: later turns are compressed before the provider complains
    for i in range(15):
        assert agent.run_conversation(f"more {i} " + "y" * 600)["completed"]
    assert len(overflows) == 1


@pytest.mark.parametrize("failure", ["500", "timeout", "garbage"])
def test_failed_summary_under_the_window_changes_nothing(make_agent, fake_provider, hermes_home, failure):
    write_config(hermes_home, "model:\n  context_length: 8000\ncompression:\n  summary_timeout: 1\n")
    sid = seeded_session(12, size=1300)  # ~4k tokens: over the 3.5k threshold, inside the 7k window
    agent = make_agent(session_id=sid)
    bad = {"500": server_error(500), "timeout": slow(text(SUMMARY), 5), "garbage": garbage()}[failure]
    fake_provider.handler = lambda body: bad if is_summary_request(body) else text("fine")
    warnings = []
    agent.status_callback = lambda kind, msg: warnings.append((kind, msg))
    before = SessionDB().get_active_messages(agent.session_id)
    result = agent.run_conversation("one more")
    assert result["completed"]
    assert len(summary_requests(fake_provider)) == 1
    assert sum(1 for k, _ in warnings if k == "warning") == 1
    after = SessionDB().get_active_messages(agent.session_id)
    assert after[:len(before)] == before and len(after) == len(before) + 2
    assert agent.compactions == 0
    # the cooldown holds: the next turns do not call the summary again
    for i in range(3):
        assert agent.run_conversation(f"again {i}")["completed"]
    assert len(summary_requests(fake_provider)) == 1
    assert sum(1 for k, _ in warnings if k == "warning") == 1


def test_failed_summary_past_the_window_uses_the_deterministic_digest(make_agent, fake_provider, hermes_home):
    write_config(hermes_home, "model:\n  context_length: 8000\n")
    limited = window_limited(8000, lambda body: text("ok " * 50))
    fake_provider.handler = lambda body: server_error(500) if is_summary_request(body) else limited(body)
    warnings = []
    agent = make_agent(status_callback=lambda kind, msg: warnings.append((kind, msg)))
    for i in range(60):
        result = agent.run_conversation(f"turn {i} " + "z" * 1500)
        assert result["completed"], (i, result.get("error"))
    window = agent.context_compressor.context_length
    assert all(estimate_prompt_tokens(b) <= window for b in chat_requests(fake_provider))
    assert agent.compactions >= 3
    assert len(summary_requests(fake_provider)) <= 3  # cooldown: 60 s, then 300 s, then 900 s
    assert sum(1 for k, _ in warnings if k == "warning") == len(summary_requests(fake_provider))
    stored = "\n".join(all_contents(agent.session_id))
    assert all(f"turn {i} " in stored for i in range(60))


def test_ineffective_compression_is_bounded(make_agent, fake_provider, hermes_home):
    write_config(hermes_home, "compression:\n  threshold_tokens: 300\n")
    fake_provider.handler = lambda body: text(SUMMARY) if is_summary_request(body) else text("ok")
    agent = make_agent()
    for i in range(50):
        assert agent.run_conversation(f"turn {i} " + "w" * 200)["completed"]
    assert 1 <= len(summary_requests(fake_provider)) <= 6
    stored = "\n".join(all_contents(agent.session_id))
    assert all(f"turn {i} " in stored for i in range(50))


def test_real_usage_reading_rebaselines_the_estimate(make_agent, fake_provider, hermes_home):
    """A provider that counts far fewer tokens than our estimate must not trigger compression every turn."""
    write_config(hermes_home, "model:\n  context_length: 8000\n")
    fake_provider.handler = lambda body: (text(SUMMARY) if is_summary_request(body)
                                          else text("ok", usage={"prompt_tokens": 500, "completion_tokens": 1}))
    agent = make_agent()
    for i in range(10):
        assert agent.run_conversation(f"turn {i} " + "v" * 2000)["completed"]
    assert summary_requests(fake_provider) == []


def test_manual_compress_keeps_session_id_and_rows(make_agent, fake_provider, hermes_home):
    fake_provider.handler = lambda body: text(SUMMARY) if is_summary_request(body) else text("reply")
    agent = make_agent()
    _fill(agent, 10, size=300)
    sid = agent.session_id
    out = agent.compress(focus="the filler")
    assert out["compressed"] and not out["deferred"] and out["after_tokens"] < out["before_tokens"]
    assert agent.session_id == sid
    assert "the filler" in summary_requests(fake_provider)[0]["messages"][-1]["content"]
    db = SessionDB()
    rows = db.get_messages(sid, include_inactive=True)
    assert sum(1 for r in rows if r["compacted"]) >= 20
    assert db.search_messages("filler")  # compacted rows stay searchable
    active = db.get_active_messages(sid)
    assert active == agent.messages
    assert json.dumps(active).count("CONTEXT SUMMARY") == 1


def test_summary_uses_the_auxiliary_model_when_configured(make_agent, fake_provider, hermes_home):
    from tests.fake_provider import FakeProvider

    with FakeProvider(default=text(SUMMARY)) as aux:
        write_config(hermes_home, f"auxiliary:\n  compression:\n    model: aux-model\n    base_url: {aux.base_url}\n"
                                  f"    api_key: aux-key\n")
        sid = seeded_session(10, size=300)
        out = make_agent(session_id=sid).compress()
        assert out["compressed"]
        assert [b["model"] for b in aux.requests] == ["aux-model"]
        assert aux.request_headers[0]["authorization"] == "Bearer aux-key"
    assert summary_requests(fake_provider) == []


def test_compacted_tool_rows_keep_their_tool_name(make_agent, fake_provider):
    script = {"n": 0}

    def reply(body):
        if is_summary_request(body):
            return text(SUMMARY)
        script["n"] += 1
        return tool_calls([("todo", {})]) if script["n"] % 2 else text("done " + "d" * 300)

    fake_provider.handler = reply
    agent = make_agent()
    for i in range(12):
        assert agent.run_conversation(f"step {i} " + "s" * 300)["completed"]
    assert agent.compress()["compressed"]
    active = [r for r in SessionDB().get_messages(agent.session_id) if r["role"] == "tool"]
    assert active and all(r["tool_name"] == "todo" for r in active)


def test_a_compaction_the_store_refuses_is_not_applied(make_agent, fake_provider):
    fake_provider.handler = lambda body: text(SUMMARY) if is_summary_request(body) else text("fine")
    sid = seeded_session(10, size=300)
    db = SessionDB()
    # a real SQLite failure on exactly the compaction's write (the summary row), e.g. a full disk
    db.conn.execute("CREATE TRIGGER refuse_summary BEFORE INSERT ON messages "
                    "WHEN NEW.content LIKE '%CONTEXT SUMMARY%' BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    before = db.get_active_messages(sid)
    warnings = []
    agent = make_agent(session_id=sid, status_callback=lambda kind, msg: warnings.append((kind, msg)))
    out = agent.compress()
    assert out["compressed"] is False
    assert any(k == "warning" and "disk full" in m for k, m in warnings)
    assert db.get_active_messages(sid) == before and agent.messages == before
    assert agent.run_conversation("still here")["completed"]
    assert len(db.get_active_messages(sid)) == len(before) + 2


def test_lock_held_by_another_live_process_defers_a_413_softly(make_agent, fake_provider):
    """The seed's scenario for real: the lock row in SQLite names a live process, the provider says 413."""
    import subprocess
    import sys

    sid = seeded_session(10, size=300)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert SessionDB().try_acquire_compression_lock(sid, f"pid={holder.pid}:tid=1:agent=ab:nonce=12345678")
        fake_provider.handler = lambda body: text(SUMMARY) if is_summary_request(body) else error(413, "too large")
        agent = make_agent(session_id=sid)
        window = agent.context_compressor.context_length
        result = agent.run_conversation("hello?")
        assert result["compression_deferred"] is True and not result["compression_exhausted"]
        assert result["failed"] is False and result["completed"] is False and result["partial"] is True
        assert agent.context_compressor.context_length == window  # a deferral changes nothing
        assert summary_requests(fake_provider) == []
        stored = [m["content"] for m in SessionDB().get_active_messages(sid)]
        assert stored[-1] == "hello?" and len(stored) == 21
    finally:
        holder.kill()
        holder.wait()
    fake_provider.handler = lambda body: text(SUMMARY) if is_summary_request(body) else text("through now")
    assert agent.run_conversation("and now?")["final_response"] == "through now"


def test_auxiliary_key_from_the_env_file_is_used(make_agent, fake_provider, hermes_home, monkeypatch):
    from tests.fake_provider import FakeProvider

    with FakeProvider(default=text(SUMMARY)) as aux:
        write_config(hermes_home, f"auxiliary:\n  compression:\n    base_url: {aux.base_url}\n")
        (hermes_home / ".env").write_text("HERMES_AUX_COMPRESSION_API_KEY=aux-from-env-123\n")
        monkeypatch.setenv("HERMES_AUX_COMPRESSION_API_KEY", "")  # so teardown removes what .env loads
        monkeypatch.delenv("HERMES_AUX_COMPRESSION_API_KEY")
        sid = seeded_session(10, size=300)
        assert make_agent(session_id=sid).compress()["compressed"]
        assert aux.request_headers[0]["authorization"] == "Bearer aux-from-env-123"
