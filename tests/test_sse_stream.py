"""Streamed replies read off the provider's SSE by ``agent/providers/sse_stream.py`` (no SDK
objects per chunk): the record rules, in-stream errors, and a real streamed turn end to end."""
from __future__ import annotations

import json

from agent.providers.sse_stream import sse_data, stream_error
from tests.fake_provider import garbage, text, tool_calls


def test_records_join_data_lines_skip_comments_and_other_fields():
    body = b': keep-alive\n\ndata: {"a":\ndata: 1}\n\nevent: error\ndata:x\nid: 7\n\ndata: [DONE]'
    assert list(sse_data([body])) == [b'{"a":\n1}', b"x", b"[DONE]"]


def test_records_split_anywhere_across_reads_and_crlf_lines_read_the_same():
    body = b'data: {"n": 1}\r\n\r\n: c\r\ndata\r\ndata: two\r\n\r\ndata: [DONE]\r\n\r\n'
    whole = list(sse_data([body]))
    assert whole == [b'{"n": 1}', b"\ntwo", b"[DONE]"]
    for size in (1, 2, 3, 5, 8):
        assert list(sse_data(body[i:i + size] for i in range(0, len(body), size))) == whole


def test_a_record_without_data_is_not_a_record_and_a_colon_in_the_value_stays():
    assert list(sse_data([b"event: ping\n\n", b"data: a: b\n\n"])) == [b"a: b"]


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


def test_the_sdks_response_streams_the_same_and_its_connection_is_reused(fake_provider):
    """Without a direct wire (a proxy, a patched SDK class) the SDK's unread response is read by
    the same parser."""
    import openai

    from agent.providers.openai_compat import request_chat

    fake_provider.queue(text("one two three", chunks=3), text("again", chunks=2))
    client = openai.OpenAI(base_url=fake_provider.base_url, api_key="k")
    deltas: list[str] = []
    msg = [{"role": "user", "content": "hi"}]
    first = request_chat(client, model="m", messages=msg, tools=None,
                         stream_callback=deltas.append)
    again = request_chat(client, model="m", messages=msg, tools=None,
                         stream_callback=deltas.append)
    assert first.content == "one two three" and again.content == "again"
    assert len(deltas) == 5 and first.finish_reason == "stop" and first.prompt_tokens
    assert fake_provider.connections == 1
    client.close()
