"""How a streamed chat completion reaches the client's socket: what is written together arrives
together (read off a raw socket, so aiohttp's and the SDK's buffering hide nothing)."""
from __future__ import annotations

import json
import socket

from tests.fake_provider import text
from tests.gateway.conftest import API_KEY
from tests.gateway.sse import parse_sse


def _open_stream(port: int, body: dict, path: str = "/v1/chat/completions") -> socket.socket:
    raw = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode()
                 + b"Content-Type: application/json\r\nConnection: close\r\n"
                 + f"Authorization: Bearer {API_KEY}\r\nContent-Length: {len(raw)}\r\n\r\n".encode()
                 + raw)
    return sock


def _dechunk(body: bytes) -> bytes:
    out = b""
    while body:
        size, _, body = body.partition(b"\r\n")
        n = int(size, 16)
        out, body = out + body[:n], body[n + 2:]
    return out


def test_the_role_chunk_goes_out_with_the_first_delta_in_one_write(make_gateway, provider_env):
    """The headers and the role chunk are held for the first record (one write, one segment): a
    provider that takes a while to answer leaves the client with nothing, then everything."""
    provider_env.queue(text("abc", chunks=1, delay=0.3))
    gw = make_gateway(api=True)
    sock = _open_stream(gw.api.port, {"model": "m", "stream": True,
                                      "messages": [{"role": "user", "content": "hi"}]})
    try:
        first = sock.recv(65536)
        rest = b""
        while data := sock.recv(65536):
            rest += data
    finally:
        sock.close()
    assert first.startswith(b"HTTP/1.1 200")
    assert b'"assistant"' in first and b'"abc"' in first, first
    head, _, body = (first + rest).partition(b"\r\n\r\n")
    records = parse_sse(_dechunk(body).decode())
    deltas = [r[1]["choices"][0]["delta"] for r in records if isinstance(r[1], dict)]
    assert deltas[:2] == [{"role": "assistant", "content": ""}, {"content": "abc"}]
    assert records[-2][1]["choices"][0]["finish_reason"] == "stop" and records[-1][1] == "[DONE]"


def _segments(sock: socket.socket) -> list[bytes]:
    """Everything the server wrote, as the reads that got it."""
    got = []
    try:
        while data := sock.recv(65536):
            got.append(data)
    finally:
        sock.close()
    return got


def test_a_tools_start_and_end_go_out_with_the_answers_first_text(make_gateway, provider_env,
                                                                 hermes_home, monkeypatch):
    """A tool's events wait for what follows them (or the stream's poll, pushed out of the way
    here): one wake-up and one write for the pair and the next text, in order, where each had its
    own."""
    import gateway.platforms.api_server.sse as sse
    from tests.fake_provider import tool_calls

    monkeypatch.setattr(sse, "POLL_SECONDS", 30.0)
    (hermes_home / "note.txt").write_text("hello\n")
    provider_env.queue(tool_calls([("read_file", {"path": str(hermes_home / "note.txt")})]),
                       text("it says hello", chunks=1, delay=0.3))
    gw = make_gateway(api=True)
    segments = _segments(_open_stream(gw.api.port, {
        "model": "m", "stream": True, "messages": [{"role": "user", "content": "read it"}]}))
    progress = [s for s in segments if b"hermes.tool.progress" in s]
    assert len(progress) == 1, segments
    pair = progress[0]
    assert pair.index(b'"running"') < pair.index(b'"completed"') < pair.index(b'"it says hello"')
    records = parse_sse(_dechunk(b"".join(segments).partition(b"\r\n\r\n")[2]).decode())
    kinds = [e or r["choices"][0]["delta"].get("content", "finish") for e, r in records[:-1]]
    assert kinds == ["", "hermes.tool.progress", "hermes.tool.progress", "it says hello", "finish"]


def test_a_responses_stream_writes_its_start_and_each_reports_events_at_once(make_gateway,
                                                                             provider_env):
    """The Responses API's opening events go out with the headers; the events one text delta
    makes (a new item, its part, the delta) go out together."""
    provider_env.queue(text("abc", chunks=1, delay=0.3))
    gw = make_gateway(api=True)
    segments = _segments(_open_stream(gw.api.port, {"model": "m", "input": "hi", "stream": True},
                                      "/v1/responses"))
    assert segments[0].startswith(b"HTTP/1.1 200")
    assert b"response.created" in segments[0] and b"response.in_progress" in segments[0]
    first_text = next(s for s in segments if b"response.output_text.delta" in s)
    assert b"response.output_item.added" in first_text
    assert b"response.content_part.added" in first_text
    records = parse_sse(_dechunk(b"".join(segments).partition(b"\r\n\r\n")[2]).decode())
    names = [e for e, _ in records]
    assert names[:5] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added", "response.output_text.delta"]
    assert names[-1] == "response.completed"
