"""Gateway start-up as a new user meets it (issue 21, items 2 and 10): a chat platform that cannot
connect is named, retried with backoff and leaves the API server serving; a busy port is refused
before the warm-up, naming --port. Real gateway subprocesses, loopback fakes."""
from __future__ import annotations

import json
import socket
import urllib.request

from gateway.status import read_status
from tests.cli.conftest import hermes_env, run_hermes
from tests.gateway.fake_telegram import FakeTelegram
from tests.waiting import wait_until

CHAT = 1001


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ask_api(gw, text: str) -> dict:
    req = urllib.request.Request(gw.url, method="POST", data=json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": text}]}).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {gw.key}"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def _telegram_state() -> dict:
    return ((read_status() or {}).get("platform_status") or {}).get("telegram") or {}


def test_unreachable_telegram_is_named_retried_and_the_api_serves(hermes_home, fake_provider,
                                                                  gateway_process):
    (hermes_home / "config.yaml").write_text("gateway:\n  warmup: false\nmodle: x\n")
    port = _free_port()  # nothing listens there yet: Telegram is unreachable
    gw = gateway_process(TELEGRAM_BOT_TOKEN="123456:TEST-TOKEN",
                         TELEGRAM_BASE_URL=f"http://127.0.0.1:{port}",
                         TELEGRAM_ALLOWED_USERS=str(CHAT))
    fake_provider.queue("served anyway")
    assert _ask_api(gw, "hi")["choices"][0]["message"]["content"] == "served anyway"

    state = wait_until(lambda: _telegram_state().get("state") == "retrying" and _telegram_state(),
                       30, "telegram retrying")
    assert "ConnectError" in state["error"] or "connect" in state["error"].lower()
    shown = run_hermes("gateway", "status", env=hermes_env())
    assert shown.returncode == 0 and "telegram (retrying: " in shown.stdout, shown.stdout
    log = (hermes_home / "logs" / "gateway.log").read_text()
    assert "platform telegram failed to start (attempt 1)" in log and "retrying in" in log
    assert "unknown key `modle` (did you mean `model`?)" in log  # config typos, every start
    assert "123456:TEST-TOKEN" not in log

    fake = FakeTelegram(port=port).start()  # Telegram comes back: the next attempt connects
    try:
        wait_until(lambda: _telegram_state().get("state") == "connected", 90, "telegram connected")
        fake_provider.queue("hello from the bot")
        fake.push_message(CHAT, CHAT, "are you there?")
        assert fake.wait_for_sent(CHAT, 1, timeout=60) == ["hello from the bot"]
        shown = run_hermes("gateway", "status", env=hermes_env())
        assert "platforms: telegram, api_server" in shown.stdout, shown.stdout
    finally:
        gw.terminate_and_wait()
        fake.stop()


def test_a_busy_port_is_refused_before_the_warm_up_naming_port(hermes_home, fake_provider):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        res = run_hermes("gateway", "run", "--api-server", "--port", str(port),
                         env=hermes_env(fake_provider), timeout=60)
    assert res.returncode == 1 and "READY" not in res.stdout
    assert f"cannot listen on 127.0.0.1:{port}" in res.stderr and "--port" in res.stderr
    assert res.stderr.count("hermes gateway: cannot listen") == 1, res.stderr
    assert "warm-up" not in (hermes_home / "logs" / "gateway.log").read_text()
