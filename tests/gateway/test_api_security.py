"""The API server is not a drive-by shell (issue 15 item 1): browser-shaped requests sent with `curl`
against `python -m hermes_cli.main gateway run` as a subprocess, and the key generated on first start."""
from __future__ import annotations

import json
import os
import stat
import subprocess

import pytest

from tests.fake_provider import text

CHAT_BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "run rm -rf ~"}]})


def curl(url: str, *args: str, data: str | None = None) -> tuple[int, dict[str, str], str]:
    """(status, lower-cased response headers, body) of one request made by the real curl binary."""
    cmd = ["curl", "-sS", "-D", "-", "--max-time", "30", *args]
    if data is not None:
        cmd += ["--data-binary", data]
    out = subprocess.run([*cmd, url], capture_output=True, text=True, timeout=60, check=True).stdout
    head, _, body = out.partition("\n\n")  # (text mode turned CRLF into LF)
    lines = head.split("\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def _error_code(body: str) -> str:
    return json.loads(body)["error"]["code"]


def test_first_start_generates_a_private_key_and_never_logs_it(gateway_process, hermes_home, fake_provider):
    (hermes_home / ".env").write_text("# my settings\nOTHER_SETTING=keep me\n")
    gw = gateway_process()
    env_file = hermes_home / ".env"
    lines = env_file.read_text().splitlines()
    assert lines[:2] == ["# my settings", "OTHER_SETTING=keep me"]
    assert len(gw.key) >= 32 and f"API_SERVER_KEY={gw.key}" in lines
    assert stat.S_IMODE(os.stat(env_file).st_mode) == 0o600
    fake_provider.queue(text("hello with the generated key"))
    status, _, body = curl(gw.url, "-H", "Content-Type: application/json", "-H", f"Authorization: Bearer {gw.key}",
                           data=CHAT_BODY)
    assert status == 200 and json.loads(body)["choices"][0]["message"]["content"] == "hello with the generated key"
    assert gw.terminate_and_wait() == 0
    log = (hermes_home / "logs" / "gateway.log").read_text()
    console = "".join(gw.stderr)
    assert str(env_file) in log and str(env_file) in console  # says where the key is ...
    assert gw.key not in log and gw.key not in console  # ... never the key itself
    again = gateway_process()  # the next start reuses the stored key
    assert again.key == gw.key and env_file.read_text().count("API_SERVER_KEY=") == 1


def test_a_web_page_cannot_drive_the_agent(gateway_process, fake_provider):
    gw = gateway_process()
    auth = ("-H", f"Authorization: Bearer {gw.key}")
    # what a page on another site can send without a preflight: text/plain, its own Origin, no key
    status, headers, body = curl(gw.url, "-H", "Content-Type: text/plain", "-H", "Origin: http://evil.example",
                                 data=CHAT_BODY)
    assert status == 403 and _error_code(body) == "origin_not_allowed"
    assert "access-control-allow-origin" not in headers
    # even knowing the key, text/plain is refused
    status, _, body = curl(gw.url, *auth, "-H", "Content-Type: text/plain", data=CHAT_BODY)
    assert status == 415 and _error_code(body) == "unsupported_media_type"
    # DNS rebinding: the page's own name resolving to 127.0.0.1
    status, _, body = curl(gw.url, *auth, "-H", "Content-Type: application/json",
                           "-H", f"Host: evil.example:{gw.port}", data=CHAT_BODY)
    assert status == 421 and _error_code(body) == "host_not_allowed"
    assert "allowed_hosts" in json.loads(body)["error"]["message"]
    # no key at all
    status, _, body = curl(gw.url, "-H", "Content-Type: application/json", data=CHAT_BODY)
    assert status == 401 and _error_code(body) == "invalid_api_key"
    # a preflight from a page nobody listed gets no CORS grant
    status, headers, _ = curl(gw.url, "-X", "OPTIONS", "-H", "Origin: http://evil.example",
                              "-H", "Access-Control-Request-Method: POST")
    assert status == 403 and "access-control-allow-origin" not in headers
    assert fake_provider.requests == []  # none of the above reached the agent
    # the loopback names with our port are fine
    for host in (f"localhost:{gw.port}", f"127.0.0.1:{gw.port}", f"[::1]:{gw.port}"):
        fake_provider.queue(text("fine"))
        status, headers, _ = curl(gw.url, *auth, "-H", "Content-Type: application/json; charset=utf-8",
                                  "-H", f"Host: {host}", data=CHAT_BODY)
        assert status == 200, host
        assert "access-control-allow-origin" not in headers
    status, _, _ = curl(gw.url, *auth, "-H", "Content-Type: application/json", "-H", "Host: localhost:1",
                        data=CHAT_BODY)
    assert status == 421  # a loopback name on another port is someone else


def test_configured_origins_and_hosts(gateway_process, hermes_home, fake_provider):
    (hermes_home / "config.yaml").write_text(
        "gateway:\n  api_server:\n    cors_origins: [http://dashboard.example:3000]\n"
        "    allowed_hosts: [hermes.internal]\n")
    gw = gateway_process(API_SERVER_KEY="configured-key-0123456789abcdef")
    assert gw.key == "configured-key-0123456789abcdef" and not (hermes_home / ".env").exists()
    origin = "http://dashboard.example:3000"
    status, headers, _ = curl(gw.url, "-X", "OPTIONS", "-H", f"Origin: {origin}",
                              "-H", "Access-Control-Request-Method: POST",
                              "-H", "Access-Control-Request-Headers: authorization, content-type")
    assert status == 204
    assert headers["access-control-allow-origin"] == origin
    assert "POST" in headers["access-control-allow-methods"]
    assert "authorization" in headers["access-control-allow-headers"].lower()
    assert "x-hermes-session-id" in headers["access-control-expose-headers"].lower()
    fake_provider.queue(text("hello dashboard"))
    status, headers, body = curl(gw.url, "-H", f"Origin: {origin}", "-H", "Content-Type: application/json",
                                 "-H", f"Authorization: Bearer {gw.key}", "-H", "Host: hermes.internal",
                                 data=CHAT_BODY)
    assert status == 200 and headers["access-control-allow-origin"] == origin
    fake_provider.queue(text("streamed to the dashboard"))
    stream_body = json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]})
    status, headers, body = curl(gw.url, "-H", f"Origin: {origin}", "-H", "Content-Type: application/json",
                                 "-H", f"Authorization: Bearer {gw.key}", data=stream_body)
    assert status == 200 and headers["access-control-allow-origin"] == origin  # streams too
    assert body.rstrip().endswith("data: [DONE]")
    # errors carry the grant too, so the page can read why it failed
    status, headers, _ = curl(gw.url, "-H", f"Origin: {origin}", "-H", "Content-Type: application/json",
                              data=CHAT_BODY)
    assert status == 401 and headers["access-control-allow-origin"] == origin
    status, headers, _ = curl(gw.url, "-H", "Origin: http://other.example", "-H", "Content-Type: application/json",
                              "-H", f"Authorization: Bearer {gw.key}", data=CHAT_BODY)
    assert status == 403 and "access-control-allow-origin" not in headers


@pytest.mark.parametrize("header,port,allowed,ok", [
    ("127.0.0.1:8642", 8642, [], True),
    ("LOCALHOST:8642", 8642, [], True),
    ("[::1]:8642", 8642, [], True),
    ("localhost", 8642, [], False),  # no port means :80
    ("evil.example:8642", 8642, [], False),
    ("evil.example:8642", 8642, ["evil.example"], True),
    ("hermes.lan", 8642, ["hermes.lan:443"], False),
    ("hermes.lan:443", 8642, ["hermes.lan:443"], True),
    ("anything:1", 8642, ["*"], True),
    ("[::1", 8642, [], False),
    ("", 8642, [], False),
    ("127.0.0.1:notaport", 8642, [], False),
])
def test_host_decisions(header, port, allowed, ok):
    from gateway.platforms.api_server.security import host_allowed

    assert host_allowed(header, "127.0.0.1", port, allowed) is ok


def test_wildcard_bind_accepts_ip_literals_but_not_names():
    from gateway.platforms.api_server.security import host_allowed

    assert host_allowed("192.168.1.5:8642", "0.0.0.0", 8642)
    assert not host_allowed("nas.local:8642", "0.0.0.0", 8642)
    assert not host_allowed("192.168.1.5:8642", "127.0.0.1", 8642)


def raw_request(port: int, head: bytes, body: bytes) -> tuple[int, str]:
    """Send bytes as they are (curl and urllib would re-encode a header that is not ASCII)."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2].decode("utf-8", "replace")


def test_a_non_ascii_authorization_header_is_a_401_not_a_crash(gateway_process, hermes_home):
    """Issue 20 item 12: bytes that are not ASCII in the Authorization header (a mangled key, a
    probe) used to raise inside the key check: HTTP 500 and a traceback per request."""
    gw = gateway_process()
    for value in ("Bearer cl\u00e9".encode("utf-8"), b"Bearer \xff\xfe\x80", b"\xc3(Bearer"):
        head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % gw.port
                + b"Content-Type: application/json\r\nAuthorization: " + value + b"\r\n")
        status, body = raw_request(gw.port, head, CHAT_BODY.encode())
        assert status == 401 and _error_code(body) == "invalid_api_key", (value, status, body)
    assert gw.terminate_and_wait() == 0
    log = (hermes_home / "logs" / "gateway.log").read_text()
    assert "Traceback" not in log and "failed" not in log


def test_key_check_takes_any_header_text():
    from gateway.platforms.api_server.security import key_matches

    key = "k\u00e9y-0123456789abcdef".encode()
    assert key_matches("Bearer k\u00e9y-0123456789abcdef", key)
    for header in ("Bearer \udcff\udcfe", "Bearer \u043a\u043b\u044e\u0447", "\udcc3Bearer x", None, ""):
        assert key_matches(header, key) is False
