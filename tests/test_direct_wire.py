"""Provider calls on the direct wire (``agent/providers/direct_wire.py``): the SDK client stays
what is lent and closed, but a request goes out on one keep-alive ``http.client`` connection;
the SDK's error classes, interrupts and stale keep-alive connections behave as before."""
from __future__ import annotations

import socket
import threading

import openai
import pytest

import run_agent
from agent.providers.client_pool import close_client
from agent.providers.direct_wire import wire_of
from agent.providers.openai_compat import make_openai_client, request_chat
from tests.fake_provider import error, text

MSG = [{"role": "user", "content": "hi"}]


def test_a_plain_request_goes_out_on_the_wire_not_through_the_sdk(make_agent, fake_provider):
    fake_provider.queue(text("one"), text("two"))
    agent = make_agent()
    assert agent.run_conversation("a")["final_response"] == "one"
    assert agent.run_conversation("b")["final_response"] == "two"
    headers = fake_provider.request_headers
    assert headers[-1]["authorization"] == "Bearer test-key"
    assert not any(h.startswith("x-stainless") for h in headers[-1])  # the SDK adds these
    assert fake_provider.connections == 1  # kept alive across the two turns


def test_a_patched_sdk_class_gets_no_wire_and_its_create_is_used(fake_provider):
    calls = []

    class Patched(openai.OpenAI):
        pass

    client = make_openai_client(Patched, fake_provider.base_url, "k")
    assert wire_of(client) is None
    client.chat.completions.create = lambda **kw: calls.append(kw) or {
        "choices": [{"message": {"content": "sdk"}, "finish_reason": "stop"}]}
    assert request_chat(client, model="m", messages=MSG, tools=None).content == "sdk"
    assert calls and not fake_provider.requests


def test_a_proxy_in_the_environment_keeps_the_sdk(fake_provider, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert wire_of(make_openai_client(openai.OpenAI, fake_provider.base_url, "k")) is None


@pytest.mark.parametrize("status,cls", [(400, openai.BadRequestError),
                                        (401, openai.AuthenticationError),
                                        (429, openai.RateLimitError),
                                        (503, openai.InternalServerError)])
def test_an_error_status_raises_the_sdks_class_with_status_and_headers(fake_provider, status, cls):
    fake_provider.queue(error(status, "nope", headers={"Retry-After": "7"}))
    client = make_openai_client(openai.OpenAI, fake_provider.base_url, "k")
    with pytest.raises(cls) as caught:
        request_chat(client, model="m", messages=MSG, tools=None)
    assert caught.value.status_code == status and "nope" in str(caught.value)
    assert caught.value.response.headers["retry-after"] == "7"
    fake_provider.queue(text("after"))
    assert request_chat(client, model="m", messages=MSG, tools=None).content == "after"
    close_client(client)


def _one_answer_per_connection() -> tuple[str, list[int], socket.socket]:
    """A server that answers one request per connection with a keep-alive response, then closes
    the connection while the client thinks it idle (what an idle timeout on the server does)."""
    srv = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []
    body = b'{"choices": [{"message": {"content": "fine"}, "finish_reason": "stop"}]}'

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            accepted.append(1)
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, rest = data.split(b"\r\n\r\n", 1)
            length = int([h.split(b":")[1] for h in head.split(b"\r\n")
                          if h.lower().startswith(b"content-length")][0])
            while len(rest) < length:
                rest += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{srv.getsockname()[1]}/v1", accepted, srv


def test_a_keep_alive_connection_the_server_closed_is_retried_once_on_a_new_one():
    url, accepted, srv = _one_answer_per_connection()
    client = make_openai_client(openai.OpenAI, url, "k")
    try:
        assert request_chat(client, model="m", messages=MSG, tools=None).content == "fine"
        assert request_chat(client, model="m", messages=MSG, tools=None).content == "fine"
        assert len(accepted) == 2
    finally:
        srv.close()
        close_client(client)


def test_a_refused_connection_is_the_sdks_connection_error():
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    client = make_openai_client(run_agent.OpenAI, f"http://127.0.0.1:{port}/v1", "k")
    with pytest.raises(openai.APIConnectionError):
        request_chat(client, model="m", messages=MSG, tools=None)


def test_the_organization_and_project_the_sdk_read_from_the_environment_are_sent(fake_provider,
                                                                                 monkeypatch):
    monkeypatch.setenv("OPENAI_ORG_ID", "org-123")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-456")
    client = make_openai_client(openai.OpenAI, fake_provider.base_url, "k")
    assert wire_of(client) is not None
    assert request_chat(client, model="m", messages=MSG, tools=None).content == "ok"
    sent = fake_provider.request_headers[-1]
    assert sent["openai-organization"] == "org-123" and sent["openai-project"] == "proj-456"
    close_client(client)


def test_an_interrupt_before_the_request_went_out_sends_nothing(fake_provider):
    from agent.providers.direct_wire import request_json

    client = make_openai_client(openai.OpenAI, fake_provider.base_url, "k")
    wire = wire_of(client)
    assert wire.acquire()
    try:
        assert wire.abort() is False  # no socket yet: only the flag says it
        with pytest.raises(openai.APIConnectionError):
            request_json(client, wire, {"model": "m", "messages": MSG}, False)
    finally:
        wire.release()
    assert fake_provider.requests == []
    assert request_chat(client, model="m", messages=MSG, tools=None).content == "ok"  # next one
    close_client(client)
