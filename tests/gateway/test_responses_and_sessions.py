"""Responses API streaming, GET/DELETE /v1/responses/{id}, the sessions API, and a client that goes
away mid-stream, against `python -m hermes_cli.main gateway run` as a subprocess."""
from __future__ import annotations

import http.client
import json
import threading

import openai
import pytest

from hermes_state import SessionDB
from tests.fake_provider import slow, text, tool_calls
from tests.gateway.sse import parse_sse, post, request


@pytest.fixture
def gw(gateway_process):
    return gateway_process()


def _client(gw) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.api + "/v1", api_key=gw.key, max_retries=0, timeout=60)


def test_responses_stream_events(gw, fake_provider, tmp_path):
    note = tmp_path / "n.txt"
    note.write_text("42\n")
    fake_provider.queue(tool_calls([("read_file", {"path": str(note)}, "call_r1")]), text("The note says 42."))
    status, _, raw = post(gw.api + "/v1/responses", gw.key, {"model": "hermes-agent", "input": "read n.txt",
                                                              "stream": True})
    assert status == 200
    records = parse_sse(raw)
    assert all(name == data["type"] for name, data in records)  # every record is named by its type
    assert [d["sequence_number"] for _, d in records] == list(range(len(records)))
    types = [name for name, _ in records]
    assert types[:2] == ["response.created", "response.in_progress"] and types[-1] == "response.completed"
    for needed in ("response.output_item.added", "response.function_call_arguments.done",
                   "response.output_text.delta", "response.output_text.done", "response.output_item.done"):
        assert needed in types, needed
    added = [d["item"] for n, d in records if n == "response.output_item.added"]
    assert added[0]["type"] == "function_call" and added[0]["call_id"] == "call_r1"
    assert added[0]["name"] == "read_file" and added[1]["type"] == "message"
    final = records[-1][1]["response"]
    assert final["status"] == "completed"
    assert [o["type"] for o in final["output"]] == ["function_call", "message"]
    assert json.loads(final["output"][0]["arguments"]) == {"path": str(note)}
    assert final["output"][1]["content"][0]["text"] == "The note says 42."
    # GET returns what the stream ended with; DELETE removes it
    status, got = request("GET", f"{gw.api}/v1/responses/{final['id']}", gw.key)
    assert status == 200 and got == final
    status, gone = request("DELETE", f"{gw.api}/v1/responses/{final['id']}", gw.key)
    assert status == 200 and gone == {"id": final["id"], "object": "response", "deleted": True}
    assert request("GET", f"{gw.api}/v1/responses/{final['id']}", gw.key)[0] == 404
    assert request("DELETE", f"{gw.api}/v1/responses/{final['id']}", gw.key)[0] == 404
    with pytest.raises(openai.NotFoundError):
        _client(gw).responses.create(model="hermes-agent", input="x", previous_response_id=final["id"])


def test_responses_stream_with_the_openai_sdk(gw, fake_provider):
    client = _client(gw)
    fake_provider.queue(text("streamed through the SDK"), text("second, chained"), text("helper stream"))
    events = list(client.responses.create(model="hermes-agent", input="hi", stream=True))
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "streamed through the SDK"
    first = events[-1].response
    assert first.output_text == "streamed through the SDK"
    second = client.responses.create(model="hermes-agent", input="and now?", previous_response_id=first.id)
    assert second.output_text == "second, chained"
    users = [m["content"] for m in fake_provider.last_request["messages"] if m["role"] == "user"]
    assert users == ["hi", "and now?"]
    assert client.responses.retrieve(second.id).output_text == "second, chained"
    with client.responses.stream(model="hermes-agent", input="helper") as stream:
        final = stream.get_final_response()
    assert final.output_text == "helper stream"
    fake_provider.queue(text("not kept"))
    unstored = client.responses.create(model="hermes-agent", input="forget", store=False)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(unstored.id)


def _make_sessions(gw, fake_provider, names: list[str]) -> dict[str, str]:
    ids = {}
    for name in names:
        fake_provider.queue(text(f"answer for {name}"))
        status, hdrs, _ = post(gw.url, gw.key, {"model": "m", "messages": [{"role": "user", "content": name}]},
                               {"X-Hermes-Session-Key": name})
        assert status == 200
        ids[name] = hdrs["x-hermes-session-id"]
    return ids


def test_sessions_api(gw, fake_provider, hermes_home):
    ids = _make_sessions(gw, fake_provider, ["alpha", "beta", "gamma"])
    with SessionDB(hermes_home / "state.db") as db:
        chat = db.create_session("20240101_000000_chat01", source="telegram")
        db.bind_session_key("telegram:dm:42", chat)
        db.append_message(chat, "user", "a private chat")
    status, page = request("GET", f"{gw.api}/api/sessions?limit=2", gw.key)
    assert status == 200 and page["has_more"] is True
    assert [s["id"] for s in page["data"]] == [chat, ids["gamma"]]  # newest first
    status, rest = request("GET", f"{gw.api}/api/sessions?limit=2&offset=2", gw.key)
    assert [s["id"] for s in rest["data"]] == [ids["beta"], ids["alpha"]] and rest["has_more"] is False
    status, one = request("GET", f"{gw.api}/api/sessions/{ids['beta']}", gw.key)
    assert status == 200 and one["id"] == ids["beta"] and one["adoptable"] is True and one["running"] is False
    assert one["source"] == "api_server" and one["message_count"] == 2
    status, msgs = request("GET", f"{gw.api}/api/sessions/{ids['beta']}/messages", gw.key)
    assert [(m["role"], m["content"]) for m in msgs["data"]] == [("user", "beta"), ("assistant", "answer for beta")]
    status, chat_view = request("GET", f"{gw.api}/api/sessions/{chat}", gw.key)
    assert status == 200 and chat_view["adoptable"] is False  # visible, not adoptable
    status, body = post(gw.url, gw.key, {"model": "m", "messages": [{"role": "user", "content": "x"}]},
                        {"X-Hermes-Session-Id": chat})[0::2]
    assert status == 403
    status, gone = request("DELETE", f"{gw.api}/api/sessions/{ids['alpha']}", gw.key)
    assert status == 200 and gone["deleted"] is True
    assert request("GET", f"{gw.api}/api/sessions/{ids['alpha']}", gw.key)[0] == 404
    assert request("DELETE", f"{gw.api}/api/sessions/{ids['alpha']}", gw.key)[0] == 404
    # the key of a deleted session starts a fresh conversation
    fake_provider.queue(text("hello again"))
    status, hdrs, _ = post(gw.url, gw.key, {"model": "m", "messages": [{"role": "user", "content": "again"}]},
                           {"X-Hermes-Session-Key": "alpha"})
    assert status == 200 and hdrs["x-hermes-session-id"] not in ids.values()
    for bad in ("limit=0", "limit=abc", "offset=-1", "limit=101"):
        status, body = request("GET", f"{gw.api}/api/sessions?{bad}", gw.key)
        assert status == 400 and body["error"]["param"] in ("limit", "offset"), bad
    assert request("GET", f"{gw.api}/api/sessions", None)[0] == 401
    assert request("GET", f"{gw.api}/api/sessions/nope/messages", gw.key)[0] == 404


def test_deleting_a_session_that_runs_a_turn_is_409(gw, fake_provider):
    ids = _make_sessions(gw, fake_provider, ["busy"])
    fake_provider.queue(slow(text("done eventually"), 3))
    done = threading.Event()
    threading.Thread(target=lambda: (post(gw.url, gw.key, {"model": "m", "messages": [
        {"role": "user", "content": "slow one"}]}, {"X-Hermes-Session-Key": "busy"}), done.set()),
        daemon=True).start()
    assert fake_provider.wait_for_requests(2, timeout=30)
    status, body = request("DELETE", f"{gw.api}/api/sessions/{ids['busy']}", gw.key)
    assert status == 409 and body["error"]["code"] == "session_busy"
    status, view = request("GET", f"{gw.api}/api/sessions/{ids['busy']}", gw.key)
    assert view["running"] is True
    assert done.wait(30)
    assert request("DELETE", f"{gw.api}/api/sessions/{ids['busy']}", gw.key)[0] == 200


def test_a_client_that_goes_away_mid_stream_interrupts_the_turn(gw, fake_provider, hermes_home):
    fake_provider.queue(text("word " * 40, chunks=40, chunk_delay=0.25))
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=30)
    conn.request("POST", "/v1/chat/completions", body=json.dumps(
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "talk a lot"}]}),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {gw.key}",
                 "X-Hermes-Session-Key": "leaver"})
    resp = conn.getresponse()
    sid = resp.getheader("X-Hermes-Session-Id")
    seen = b""
    while b"word" not in seen:  # the answer has started streaming
        seen += resp.read1(4096)
    conn.sock.shutdown(2)
    conn.close()
    # the session stays usable and consistent: the next turn runs after the interrupted one ended
    fake_provider.queue(text("still here"))
    status, hdrs, body = post(gw.url, gw.key, {"model": "m", "messages": [{"role": "user", "content": "next"}]},
                              {"X-Hermes-Session-Key": "leaver"})
    assert status == 200 and json.loads(body)["choices"][0]["message"]["content"] == "still here"
    assert hdrs["x-hermes-session-id"] == sid
    sent = fake_provider.last_request["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["talk a lot", "next"]
    assert not any(m["role"] == "assistant" and m.get("content") == "word " * 40 for m in sent)
    gw.terminate_and_wait()
    assert "its turn was interrupted" in (hermes_home / "logs" / "gateway.log").read_text()
