"""The turn loop end to end: real openai SDK, real HTTP to the loopback provider, real SQLite."""
from __future__ import annotations

import json
import threading

import pytest

import run_agent
from hermes_state import SessionDB
from tests.fake_provider import (check_well_formed, cut_stream, error, garbage, rate_limited, server_error, slow,
                                 text, tool_calls)


def _well_formed(fp):
    for body in fp.requests:
        assert check_well_formed(body) == [], check_well_formed(body)


def test_plain_turn_returns_answer_and_persists(make_agent, fake_provider):
    fake_provider.queue(text("Hello there"))
    agent = make_agent()
    result = agent.run_conversation("hi")
    assert result["final_response"] == "Hello there"
    assert result["completed"] is True and result["failed"] is False and result["partial"] is False
    assert result["api_calls"] == 1 and result["last_prompt_tokens"] > 0
    assert result["session_id"] == agent.session_id and result["model"] == "fake-model"
    body = fake_provider.requests[0]
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][-1] == {"role": "user", "content": "hi"}
    db = SessionDB()
    rows = db.get_active_messages(agent.session_id)
    assert [(m["role"], m["content"]) for m in rows] == [("user", "hi"), ("assistant", "Hello there")]
    row = db.get_session(agent.session_id)
    assert row["prompt_tokens"] == result["prompt_tokens"] > 0
    assert row["completion_tokens"] == result["completion_tokens"] > 0


def test_system_prompt_is_byte_identical_across_turns(make_agent, fake_provider):
    agent = make_agent()
    agent.run_conversation("one")
    agent.run_conversation("two")
    first, second = (b["messages"][0]["content"] for b in fake_provider.requests)
    assert first == second
    assert [m["content"] for m in fake_provider.requests[1]["messages"][1:]] == ["one", "ok", "two"]


def test_tool_calls_run_in_parallel_with_results_in_call_order(make_agent, fake_provider, tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    fake_provider.queue(
        tool_calls([("read_file", {"path": "a.txt"}), ("read_file", {"path": "b.txt"}),
                    ("terminal", {"command": "echo from-shell"})]),
        text("done"))
    events = []
    agent = make_agent(tool_progress_callback=events.append)
    result = agent.run_conversation("read both")
    assert result["final_response"] == "done" and result["completed"]
    second = fake_provider.requests[1]["messages"]
    call_ids = [c["id"] for c in second[-4]["tool_calls"]]
    tool_msgs = second[-3:]
    assert [m["tool_call_id"] for m in tool_msgs] == call_ids
    assert "alpha" in tool_msgs[0]["content"] and "beta" in tool_msgs[1]["content"]
    assert "from-shell" in tool_msgs[2]["content"]
    assert sorted(e["type"] for e in events) == ["tool_end"] * 3 + ["tool_start"] * 3
    _well_formed(fake_provider)
    stored = SessionDB().get_messages(agent.session_id)
    assert [r["tool_name"] for r in stored if r["role"] == "tool"] == ["read_file", "read_file", "terminal"]


def test_malformed_and_unknown_tool_calls_become_fixable_errors(make_agent, fake_provider):
    fake_provider.queue(
        tool_calls([("read_file", "{not json"), ("no_such_tool", {}), ("read_file", {})]),
        text("recovered"))
    result = make_agent().run_conversation("go")
    assert result["completed"] and result["final_response"] == "recovered"
    results = [json.loads(m["content"])["error"] for m in fake_provider.requests[1]["messages"][-3:]]
    assert "not valid JSON" in results[0]
    assert "unknown tool 'no_such_tool'" in results[1] and "read_file" in results[1]
    assert "path" in results[2]
    _well_formed(fake_provider)


def test_streaming_delivers_deltas_that_make_the_answer(make_agent, fake_provider):
    fake_provider.queue(text("streamed words arrive in pieces"))
    deltas = []
    result = make_agent().run_conversation("hi", stream_callback=deltas.append)
    assert len(deltas) > 1 and "".join(deltas) == result["final_response"] == "streamed words arrive in pieces"
    assert fake_provider.requests[0]["stream"] is True


@pytest.mark.parametrize("failure", [rate_limited(retry_after=0), server_error(500), server_error(503),
                                     cut_stream(), garbage()])
def test_retryable_failures_are_retried(make_agent, fake_provider, failure, monkeypatch):
    waits = []
    real = run_agent.jittered_backoff
    monkeypatch.setattr(run_agent, "jittered_backoff", lambda *a, **k: waits.append(k) or real(*a, **k) * 0)
    fake_provider.queue(failure, text("after retry"))
    stream = [] if failure.kind == "cut" else None
    result = make_agent().run_conversation("hi", stream_callback=stream.append if stream is not None else None)
    assert result["final_response"] == "after retry" and result["completed"]
    assert len(fake_provider.requests) == 2 and len(waits) == 1


def test_retry_after_header_is_honoured(make_agent, fake_provider, monkeypatch):
    seen = []
    monkeypatch.setattr(run_agent, "jittered_backoff", lambda attempt, retry_after=None, **k: seen.append(retry_after) or 0)
    fake_provider.queue(rate_limited(retry_after=7), text("ok now"))
    assert make_agent().run_conversation("hi")["completed"]
    assert seen == [7.0]


def test_auth_error_fails_fast_naming_the_setting(make_agent, fake_provider):
    fake_provider.queue(error(401, "Invalid API key test-key"))
    result = make_agent().run_conversation("hi")
    assert result["failed"] is True and result["completed"] is False
    assert "OPENAI_API_KEY" in result["error"] and "test-key" not in result["error"]
    assert len(fake_provider.requests) == 1


def test_retries_give_up_with_a_clear_message(make_agent, fake_provider, monkeypatch):
    monkeypatch.setattr(run_agent, "jittered_backoff", lambda *a, **k: 0)
    fake_provider.default = server_error(502)
    agent = make_agent()
    result = agent.run_conversation("hi")
    assert result["failed"] and "retries" in result["error"]
    assert len(fake_provider.requests) == 4
    # the user's message is kept and the next turn works, with alternation intact
    fake_provider.default = text("back")
    assert agent.run_conversation("again")["final_response"] == "back"
    _well_formed(fake_provider)  # a placeholder answer between the two user messages, on the wire
    assert fake_provider.last_request["messages"][-2]["content"].startswith("(no reply")
    roles = [m["role"] for m in SessionDB().get_active_messages(agent.session_id)]
    assert roles == ["user", "user", "assistant"]  # and never in the store


def test_max_iterations_stops_a_tool_loop(make_agent, fake_provider):
    fake_provider.default = tool_calls([("todo", {})])
    result = make_agent(max_iterations=3).run_conversation("loop forever")
    assert result["completed"] is False and result["api_calls"] == 3
    assert "max_iterations" in result["error"]
    _well_formed(fake_provider)


def test_interrupt_from_another_thread_stops_the_turn(make_agent, fake_provider):
    fake_provider.queue(slow(text("too late"), 30))
    agent = make_agent()
    threading.Thread(target=lambda: fake_provider.wait_for_requests(1, 10) and agent.interrupt(), daemon=True).start()
    result = agent.run_conversation("slow one")
    assert result["interrupted"] is True and result["completed"] is False
    fake_provider.queue(text("next works"))
    assert agent.run_conversation("next")["final_response"] == "next works"
    _well_formed(fake_provider)


def test_resumed_session_continues_its_history(make_agent, fake_provider):
    first = make_agent()
    first.run_conversation("remember the word kiwi")
    again = make_agent(session_id=first.session_id)
    again.run_conversation("what was the word?")
    sent = [m.get("content") for m in fake_provider.requests[-1]["messages"]]
    assert "remember the word kiwi" in sent
    assert fake_provider.requests[-1]["messages"][0] == fake_provider.requests[0]["messages"][0]


def test_trajectories_are_saved_as_sharegpt_lines(make_agent, fake_provider, hermes_home):
    fake_provider.queue(tool_calls([("todo", {})]), text("final"))
    make_agent(save_trajectories=True).run_conversation("plan")
    lines = (hermes_home / "trajectories" / "trajectory_samples.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    assert [t["from"] for t in record["conversations"]] == ["system", "human", "gpt", "tool", "gpt"]
    assert record["conversations"][-1]["value"] == "final"


def test_client_error_is_reported_not_retried(make_agent, fake_provider):
    fake_provider.queue(error(400, "model 'nope' does not exist"))
    result = make_agent().run_conversation("hi")
    assert result["failed"] and "does not exist" in result["error"]
    assert len(fake_provider.requests) == 1


def test_interrupt_during_a_stream_keeps_the_session_usable(make_agent, fake_provider):
    fake_provider.queue(text("one two three four five six seven eight " * 3, chunks=20, chunk_delay=0.5))
    agent = make_agent()
    deltas = []

    def on_delta(d):
        deltas.append(d)
        agent.interrupt()

    result = agent.run_conversation("stream slowly", stream_callback=on_delta)
    assert result["interrupted"] is True and len(deltas) < 20
    fake_provider.queue(text("fresh"))
    assert agent.run_conversation("again")["final_response"] == "fresh"
    _well_formed(fake_provider)


def test_an_empty_reply_is_asked_again_once(make_agent, fake_provider):
    fake_provider.queue(text(""), text("now with words"))
    result = make_agent().run_conversation("hi")
    assert result["final_response"] == "now with words" and len(fake_provider.requests) == 2
    fake_provider.queue(text(""), text(""))
    result = make_agent().run_conversation("hi")
    assert result["completed"] and result["final_response"] == "" and len(fake_provider.requests) == 4


def test_secrets_never_reach_the_provider_or_the_store(make_agent, fake_provider, monkeypatch, tmp_path):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-9f8e7d6c5b4a")
    (tmp_path / "notes.txt").write_text("token tok-9f8e7d6c5b4a\n")  # the shell itself no longer gets it
    fake_provider.queue(tool_calls([("terminal", {"command": "cat notes.txt; echo $MY_SERVICE_TOKEN; echo done"})]),
                        text("ok"))
    events = []
    agent = make_agent(api_key="sk-secret-key-123456", tool_progress_callback=events.append)
    assert agent.run_conversation("print the token")["completed"]
    assert "tok-9f8e7d6c5b4a" not in json.dumps(events, default=str) and "***" in json.dumps(events, default=str)
    sent = json.dumps(fake_provider.requests[1]["messages"])
    assert "tok-9f8e7d6c5b4a" not in sent and "***" in sent and "done" in sent
    stored = json.dumps(SessionDB().get_messages(agent.session_id, include_inactive=True))
    assert "tok-9f8e7d6c5b4a" not in stored


def test_embedded_model_gets_one_tool_round_then_must_answer(make_agent, fake_provider):
    """A tiny local model would call tools forever; after one round the request carries no tools."""
    fake_provider.handler = lambda body: tool_calls([("todo", {})]) if body.get("tools") else text("answer")
    agent = make_agent()
    assert agent.client is not None  # the loopback client, built before the switch below
    agent.provider = "local"  # same loop, the embedded model's policy
    result = agent.run_conversation("hi")
    first, second = fake_provider.requests[:2]
    assert first.get("tools") and not second.get("tools")
    assert result["api_calls"] == 2 and result["final_response"] == "answer"


def test_undo_takes_the_last_turn_out_of_the_live_history_only(make_agent, fake_provider):
    agent = make_agent()
    agent.run_conversation("first")
    fake_provider.queue(tool_calls([("todo", {})]), text("second answer"))
    agent.run_conversation("second")
    assert agent.undo_last_turn() == "second"
    db = SessionDB()
    assert [m["content"] for m in db.get_active_messages(agent.session_id)] == ["first", "ok"]
    rows = db.get_messages(agent.session_id, include_inactive=True)
    assert len(rows) == 6 and [r["content"] for r in rows if not r["active"]][-1] == "second answer"
    assert db.get_session(agent.session_id)["compactions"] == 0
    agent.run_conversation("third")
    assert [m["content"] for m in fake_provider.requests[-1]["messages"][1:]] == ["first", "ok", "third"]


def test_a_session_left_with_an_unanswered_tool_call_is_repaired_on_resume(make_agent, fake_provider):
    db = SessionDB()
    sid = db.create_session()
    db.append_messages(sid, [
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_dead", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}]},
    ])  # the process died before the tool's result was written
    agent = make_agent(session_id=sid)
    assert agent.run_conversation("are you there?")["completed"]
    _well_formed(fake_provider)
    assert [m["role"] for m in db.get_messages(sid, include_inactive=True)].count("user") >= 2


def test_parallel_dangerous_calls_ask_one_at_a_time(make_agent, fake_provider, tmp_path):
    for name in ("keep_a", "keep_b"):
        (tmp_path / name).mkdir()
    state = {"active": 0, "max": 0, "asked": []}

    def approve(command, reason):
        state["active"] += 1
        state["max"] = max(state["max"], state["active"])
        threading.Event().wait(0.2)
        state["asked"].append(command)
        state["active"] -= 1
        return "deny"

    fake_provider.queue(tool_calls([("terminal", {"command": "rm -rf keep_a"}),
                                    ("terminal", {"command": "rm -rf keep_b"})]), text("ok"))
    agent = make_agent(approval_callback=approve)
    assert agent.run_conversation("clean up")["completed"]
    assert len(state["asked"]) == 2 and state["max"] == 1
    assert (tmp_path / "keep_a").is_dir() and (tmp_path / "keep_b").is_dir()


def test_close_releases_the_client_and_the_agent_still_works(make_agent, fake_provider):
    agent = make_agent()
    agent.run_conversation("one")
    first = agent.client
    agent.close()
    assert agent.run_conversation("two")["completed"]
    assert agent.client is not first and first.is_closed()
