"""Streamed replies read off the provider's SSE by ``agent/providers/sse_stream.py`` (no SDK
objects per chunk): the record rules, in-stream errors, and a real streamed turn end to end."""
from __future__ import annotations

import json

from agent.providers.sse_stream import sse_records, stream_error
from tests.fake_provider import garbage, text, tool_calls


def test_records_join_data_lines_skip_comments_and_keep_the_event_name():
    lines = [": keep-alive", "", "data: {\"a\":", "data: 1}", "", "event: error", "data:x", "",
             "data: [DONE]"]
    assert list(sse_records(lines)) == [("", "{\"a\":\n1}"), ("error", "x"), ("", "[DONE]")]


def test_a_record_without_data_is_not_a_record_and_a_colon_in_the_value_stays():
    assert list(sse_records(["event: ping", "", "data: a: b", ""])) == [("", "a: b")]


def test_an_error_member_is_an_error_with_the_providers_message():
    assert stream_error({"error": {"message": "overloaded", "code": 529}}) == (
        "overloaded", {"message": "overloaded", "code": 529})
    assert stream_error({"error": "boom"})[0] == "An error occurred during streaming"
    assert stream_error({"choices": []}) is None and stream_error([1]) is None


def test_a_streamed_tool_turn_reassembles_calls_reasoning_and_usage(make_agent, fake_provider):
    fake_provider.queue(tool_calls([("read_file", {"path": "notes.txt"})]),
                        text("the notes say hi", reasoning="read it first", chunks=4))
    agent = make_agent()
    thoughts, deltas = [], []
    agent.reasoning_callback = thoughts.append
    result = agent.run_conversation("read notes.txt", stream_callback=deltas.append)
    assert result["completed"] and result["final_response"] == "the notes say hi"
    assert "".join(deltas) == "the notes say hi" and len(deltas) == 4
    assert thoughts == ["read it first"]
    call = [m for m in result["messages"] if m.get("tool_calls")][0]["tool_calls"][0]
    assert call["function"]["name"] == "read_file"
    assert json.loads(call["function"]["arguments"]) == {"path": "notes.txt"}
    assert result["prompt_tokens"] > 0 and result["completion_tokens"] > 0


def test_streamed_calls_reuse_the_providers_connection(make_agent, fake_provider):
    fake_provider.queue(tool_calls([("read_file", {"path": "notes.txt"})]), text("done"))
    assert make_agent().run_conversation("go", stream_callback=lambda _: None)["completed"]
    assert len(fake_provider.requests) == 2 and fake_provider.connections == 1


def test_an_error_reported_inside_the_stream_fails_the_turn_with_its_message(make_agent,
                                                                            fake_provider):
    body = 'data: {"error": {"message": "Invalid API key test-key", "type": "auth"}}\n\n'
    fake_provider.default = garbage(body, content_type="text/event-stream")
    result = make_agent().run_conversation("hi", stream_callback=lambda _: None)
    assert result["failed"] is True and not result["completed"]
    assert "test-key" not in result["error"]
