"""Issue 26 part 5: ``X-Hermes-Session-Key`` and ``X-Hermes-Session-Id`` together (Hermes 0.22).

The key names the conversation, the id its current transcript: an unknown id starts that
transcript under that id, a known one is continued, and every answer carries both headers.
"""
from __future__ import annotations

from tests.fake_provider import text
from tests.gateway.sse import parse_sse, post

MSG = [{"role": "user", "content": "hi"}]


def _chat(gw, headers, content="hi", stream=False):
    body = {"model": "m", "messages": [{"role": "user", "content": content}], "stream": stream}
    return post(gw.base_url + "/chat/completions", gw.api_key, body, headers)


def test_both_headers_start_the_named_transcript_and_answer_with_both(make_gateway, fake_provider):
    gw = make_gateway(api=True)
    fake_provider.queue(text("first"), text("second"), text("streamed"))
    both = {"X-Hermes-Session-Key": "editor-1", "X-Hermes-Session-Id": "transcript-a"}
    status, hdrs, body = _chat(gw, both, "remember 7")
    assert status == 200, body
    assert hdrs["x-hermes-session-id"] == "transcript-a"
    assert hdrs["x-hermes-session-key"] == "editor-1"
    assert gw.db.get_session("transcript-a")["source"] == "api_server"
    assert [m["content"] for m in gw.db.get_messages("transcript-a")] == ["remember 7", "first"]
    # the key alone now continues that transcript
    status, hdrs, _ = _chat(gw, {"X-Hermes-Session-Key": "editor-1"}, "and now?")
    assert status == 200 and hdrs["x-hermes-session-id"] == "transcript-a"
    users = [m["content"] for m in fake_provider.last_request["messages"] if m["role"] == "user"]
    assert users == ["remember 7", "and now?"]
    # a new id with the same key starts the next transcript (the old one stays)
    status, hdrs, raw = _chat(gw, {**both, "X-Hermes-Session-Id": "transcript-b"}, "fresh", True)
    assert status == 200 and hdrs["x-hermes-session-id"] == "transcript-b"
    assert hdrs["x-hermes-session-key"] == "editor-1"
    assert parse_sse(raw)[-1] == (None, "[DONE]")
    users = [m["content"] for m in fake_provider.last_request["messages"] if m["role"] == "user"]
    assert users == ["fresh"]
    assert len(gw.db.get_messages("transcript-a")) == 4


def test_both_headers_continue_a_known_transcript(make_gateway, fake_provider):
    gw = make_gateway(api=True)
    fake_provider.queue(text("one"), text("two"))
    status, hdrs, _ = _chat(gw, {"X-Hermes-Session-Key": "first-name"}, "the number is 12")
    sid = hdrs["x-hermes-session-id"]
    both = {"X-Hermes-Session-Key": "second-name", "X-Hermes-Session-Id": sid}
    status, hdrs, body = _chat(gw, both, "which number?")
    assert status == 200, body
    assert hdrs["x-hermes-session-id"] == sid and hdrs["x-hermes-session-key"] == "second-name"
    users = [m["content"] for m in fake_provider.last_request["messages"] if m["role"] == "user"]
    assert users == ["the number is 12", "which number?"]
