"""Issue 13 items 7-8 against ``python -m hermes_cli.main gateway run`` as a subprocess: ready means warm, more turns
in flight than the old 128-thread default, a polite refusal past the turn limit, and the load figures
in ``/health/detailed`` and ``hermes gateway status``. Counts are observed, never timed."""
from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Optional

import pytest

from gateway.capacity import BUSY_CHAT_REPLY
from tests.cli.conftest import hermes_env, run_hermes
from tests.fake_provider import text
from tests.gateway.conftest import SESSION, GatewayProcess
from tests.gateway.fake_telegram import FakeTelegram
from tests.waiting import wait_until


@pytest.fixture
def held(fake_provider: Any) -> threading.Event:
    """Every provider call waits until the test sets the event: turns stay in flight, without timing."""
    release = threading.Event()

    def answer(_body: dict) -> Any:
        release.wait(120)
        return text("released")

    fake_provider.handler = answer
    yield release
    release.set()


def request(gw: GatewayProcess, path: str, body: Optional[dict] = None, key: Optional[str] = None,
            headers: Optional[dict[str, str]] = None) -> tuple[int, Any, Any]:
    """(status, headers, JSON body) of a GET (no body) or POST to the gateway."""
    hdrs = {"Authorization": f"Bearer {gw.key if key is None else key}", **(headers or {})}
    data = None
    if body is not None:
        data, hdrs["Content-Type"] = json.dumps(body).encode(), "application/json"
    req = urllib.request.Request(gw.api + path, data=data, headers=hdrs, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.headers, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, json.loads(exc.read() or b"null")


def detailed(gw: GatewayProcess) -> dict[str, Any]:
    status, _, body = request(gw, "/health/detailed")
    assert status == 200, body
    return body


def test_ready_means_warm(hermes_home: Path, fake_provider: Any, gateway_process: Any) -> None:
    gw = gateway_process()
    report = detailed(gw)
    warm = report["warmup"]
    assert warm["done"] is True and warm["sdk_loaded"] is True and warm["failed"] == {}
    # start-up is frozen out of the collector's scans; full collections wait for the clock
    assert report["gc"]["settled"] is True and report["gc"]["frozen_objects"] > 10_000
    assert {"sdk", "tls", "agent", "prompt", "client", "store"} <= set(warm["steps"])
    log = (hermes_home / "logs" / "gateway.log").read_text()
    assert log.index("warm-up done") < log.index("API server listening") < log.index("gateway running")
    assert fake_provider.requests == []  # warming up never calls the provider
    assert gw.terminate_and_wait() == 0


def test_without_warm_up_the_sdk_is_not_loaded_when_ready(
        hermes_home: Path, fake_provider: Any,
        gateway_process: Any) -> None:
    (hermes_home / "config.yaml").write_text("gateway:\n  warmup: false\n")
    gw = gateway_process()
    warm = detailed(gw)["warmup"]
    assert warm["done"] is False and warm["sdk_loaded"] is False  # the field reports, it does not assume
    assert request(gw, "/v1/chat/completions", {"model": "m", "messages": [
        {"role": "user", "content": "hi"}]})[0] == 200
    assert detailed(gw)["warmup"]["sdk_loaded"] is True


def test_health_detailed_needs_the_key_and_health_does_not(
        hermes_home: Path, fake_provider: Any,
        gateway_process: Any) -> None:
    gw = gateway_process()
    status, _, body = request(gw, "/health/detailed", key="wrong-key-0123456789")
    assert status == 401 and body["error"]["code"] == "invalid_api_key"
    assert request(gw, "/health", key="wrong-key-0123456789")[0] == 200
    caps = request(gw, "/v1/capabilities")[2]
    assert caps["endpoints"]["health_detailed"] == {"method": "GET", "path": "/health/detailed"}


def test_more_turns_in_flight_than_the_old_default_of_128(
        hermes_home: Path, fake_provider: Any,
        gateway_process: Any, held: threading.Event) -> None:
    n = 150
    gw = gateway_process()
    replies = [gw.post_async(f"question {i}", f"s{i}") for i in range(n)]
    assert fake_provider.wait_for_requests(n, timeout=120), len(fake_provider.requests)  # all at the provider
    turns = wait_until(lambda: (t := detailed(gw)["turns"])["in_flight"] == n and t, what="n in flight")
    assert turns["queued"] == 0 and turns["limit"] >= 1000 and turns["refused"] == 0
    assert detailed(gw)["turn_threads"]["threads"] >= n  # every turn on a thread of its own

    env = hermes_env(fake_provider)
    status = wait_until(lambda: (r := run_hermes("gateway", "status", env=env)).returncode == 0
                        and f"turns: {n} in flight, 0 queued" in r.stdout and r, what="status file")
    as_json = json.loads(run_hermes("gateway", "status", "--json", env=env).stdout)
    assert as_json["turns"]["in_flight"] == n and status.stderr == ""

    held.set()
    answers = [r.get(timeout=120) for r in replies]
    assert all(isinstance(a, dict) and a["choices"][0]["message"]["content"] == "released" for a in answers)
    after = wait_until(lambda: (t := detailed(gw)["turns"])["accepted"] == 0 and t, what="drained")
    assert after["in_flight"] == 0 and after["peak_in_flight"] == n
    assert gw.terminate_and_wait() == 0


def test_past_the_turn_limit_the_api_says_429_with_retry_after(
        hermes_home: Path, fake_provider: Any,
        gateway_process: Any, held: threading.Event) -> None:
    (hermes_home / "config.yaml").write_text("gateway:\n  turn_limit: 2\n")
    gw = gateway_process()
    first = [gw.post_async("hold on", f"held{i}") for i in range(2)]
    assert fake_provider.wait_for_requests(2, timeout=60)
    chat = {"model": "m", "messages": [{"role": "user", "content": "one more"}]}
    for body, path in ((chat, "/v1/chat/completions"), ({**chat, "stream": True}, "/v1/chat/completions"),
                       ({"model": "m", "input": "one more"}, "/v1/responses")):
        status, headers, err = request(gw, path, body, headers={SESSION: "extra"})
        assert status == 429, (path, err)
        assert int(headers["Retry-After"]) >= 1
        assert err["error"]["code"] == "turn_limit" and "2 turns" in err["error"]["message"]
    turns = detailed(gw)["turns"]
    assert turns["limit"] == 2 and turns["limit_source"] == "gateway.turn_limit"
    assert turns["accepted"] == 2 and turns["refused"] == 3
    assert len(fake_provider.requests) == 2  # the refused ones never reached the provider

    held.set()
    assert all(isinstance(r.get(timeout=60), dict) for r in first)
    wait_until(lambda: detailed(gw)["turns"]["accepted"] == 0, what="the held turns to end")
    assert request(gw, "/v1/chat/completions", chat, headers={SESSION: "extra"})[0] == 200  # room again
    assert gw.terminate_and_wait() == 0


def test_past_the_turn_limit_a_chat_gets_a_short_reply(
        hermes_home: Path, fake_provider: Any,
        gateway_process: Any, held: threading.Event) -> None:
    (hermes_home / "config.yaml").write_text("gateway:\n  turn_limit: 1\n")
    fake = FakeTelegram().start()
    try:
        gw = gateway_process(TELEGRAM_BOT_TOKEN=fake.token,
                            TELEGRAM_BASE_URL=fake.base_url, TELEGRAM_ALLOWED_USERS="1001")
        api_turn = gw.post_async("holding the only slot", "api")
        assert fake_provider.wait_for_requests(1, timeout=60)
        fake.push_message(1001, 1001, "hello from the chat")
        assert fake.wait_for_sent(1001, 1, timeout=60) == [BUSY_CHAT_REPLY]
        assert len(fake_provider.requests) == 1
        held.set()
        assert isinstance(api_turn.get(timeout=60), dict)
        assert gw.terminate_and_wait() == 0
    finally:
        fake.stop()


def test_a_junk_turn_limit_stops_the_start_with_one_line(
        hermes_home: Path, fake_provider: Any) -> None:
    (hermes_home / "config.yaml").write_text("gateway:\n  turn_limit: lots\n")
    res = run_hermes("gateway", "run", "--api-server", "--port", "0", env=hermes_env(fake_provider))
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr.splitlines() == [  # checked when config.yaml is read, like any setting
        f"hermes gateway: {hermes_home / 'config.yaml'}: `gateway.turn_limit` must be a whole "
        "number >= 1 or 'auto', not 'lots'; fix it with `hermes config set gateway.turn_limit "
        "<value>`"]
