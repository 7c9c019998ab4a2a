"""Privacy at rest (issue 15 item 5): HERMES_HOME 0700, store and logs 0600 (tightened when found loose,
reported by `hermes doctor`), throwaway API turns write no transcript, pairing requests rate-limited."""
from __future__ import annotations

import logging
import os
import sqlite3
import stat

import openai

from gateway.access import (CODES_WINDOW_SECONDS, MAX_CODES_PER_USER, REPLY_INTERVAL_SECONDS, AccessControl,
                            PairingStore)
from tests.cli.conftest import hermes_env, run_hermes
from tests.fake_provider import text


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_store_and_home_are_private_and_loose_ones_are_tightened(hermes_home):
    from hermes_state import SessionDB

    hermes_home.chmod(0o755)  # as an older version (or a umask) left it
    old = sqlite3.connect(hermes_home / "state.db")
    old.execute("PRAGMA journal_mode=WAL")
    old.execute("CREATE TABLE t (x)")
    old.execute("INSERT INTO t VALUES (1)")
    old.commit()  # stays open: the -wal and -shm files stay too
    for suffix in ("", "-wal", "-shm"):
        os.chmod(f"{hermes_home / 'state.db'}{suffix}", 0o644)
    with SessionDB() as db:
        db.create_session("s1")
        db.append_message("s1", "user", "private words")
        assert _mode(hermes_home) == 0o700
        for suffix in ("", "-wal", "-shm"):
            assert _mode(f"{hermes_home / 'state.db'}{suffix}") == 0o600, suffix
    old.close()
    fresh = hermes_home / "sub" / "new.db"
    with SessionDB(fresh) as db:  # a new store is 0600 from its first byte, its new folder 0700
        db.create_session("s2")
    assert _mode(fresh) == 0o600 and _mode(fresh.parent) == 0o700


def test_gateway_logs_are_private_including_rotated_ones(hermes_home):
    from gateway.logs import RedactSecrets, setup_logging

    path, handlers = setup_logging(RedactSecrets([]), verbose=False)
    try:
        logging.getLogger("gateway.test").info("a line")
        assert _mode(path) == 0o600 and _mode(path.parent) == 0o700
        handlers[0].doRollover()  # the file handler
        logging.getLogger("gateway.test").info("after rollover")
        assert _mode(path) == 0o600 and _mode(f"{path}.1") == 0o600
    finally:
        for h in handlers:
            logging.getLogger().removeHandler(h)
            h.close()


def test_doctor_reports_loose_permissions_with_the_fix(hermes_home):
    env = hermes_env(None, HERMES_DOCTOR_TIMEOUT="1")
    (hermes_home / "logs").mkdir()
    (hermes_home / "logs" / "gateway.log").write_text("old log\n")
    (hermes_home / "logs" / "gateway.log").chmod(0o644)
    hermes_home.chmod(0o755)
    res = run_hermes("doctor", env=env)
    line = next(x for x in res.stdout.splitlines() if "permissions" in x)
    assert line.startswith("✗ permissions:"), res.stdout
    assert f"chmod 700 {hermes_home}" in line and f"chmod 600 {hermes_home / 'logs' / 'gateway.log'}" in line
    (hermes_home / "logs" / "gateway.log").chmod(0o600)
    (hermes_home / "logs").chmod(0o700)
    res = run_hermes("doctor", env=env)  # the first run's store open tightened HERMES_HOME itself
    assert any(x.startswith("✓ permissions:") for x in res.stdout.splitlines()), res.stdout


def test_stateless_and_store_false_turns_write_no_transcript(make_gateway, provider_env):
    gw = make_gateway(api=True)
    client = openai.OpenAI(base_url=gw.base_url, api_key=gw.api_key, max_retries=0, timeout=30)
    provider_env.queue(text("stateless answer"), text("store false answer"))
    raw = client.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "my secret plan"}])
    assert raw.parse().choices[0].message.content == "stateless answer"
    assert "X-Hermes-Session-Id" not in raw.headers  # no session exists to name
    r = client.responses.create(model="hermes-agent", input="another secret", store=False)
    assert r.output_text == "store false answer"
    assert gw.db.count_sessions() == 0
    assert gw.db.search_messages("secret") == []


class Clock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


def test_pairing_requests_are_rate_limited_per_user(hermes_home):
    clock = Clock()
    store = PairingStore(hermes_home, clock=clock)
    acl = AccessControl(store, env={})
    first = acl.refusal("telegram", "66", "spammer", "66")
    assert first and "hermes pairing approve telegram" in first
    for _ in range(20):  # a user who keeps messaging gets no reply per message, and no new code
        assert acl.refusal("telegram", "66") is None
    assert len(store.list()["telegram"]["pending"]) == 1
    clock.t += REPLY_INTERVAL_SECONDS
    assert acl.refusal("telegram", "66") == first  # reminded later, same live code
    codes = {first.split("approve telegram ")[1].split()[0]}
    for _ in range(MAX_CODES_PER_USER + 2):  # each code expires unused; a new one only so often
        clock.t += 3601
        reply = acl.refusal("telegram", "66")
        if "approve telegram" in reply:
            codes.add(reply.split("approve telegram ")[1].split()[0])
        else:
            assert "too often" in reply
    assert len(codes) == MAX_CODES_PER_USER
    assert store.request_code("telegram", "66") is None  # the cap holds for direct requests too
    clock.t += CODES_WINDOW_SECONDS
    assert store.request_code("telegram", "66")  # a day later they may ask again
    other = acl.refusal("telegram", "77")  # other users are not affected
    assert other and "approve telegram" in other


def test_approval_resets_the_throttle(hermes_home):
    clock = Clock()
    store = PairingStore(hermes_home, clock=clock)
    acl = AccessControl(store, env={})
    code = acl.refusal("telegram", "5").split("approve telegram ")[1].split()[0]
    assert store.approve("telegram", code) and acl.is_allowed("telegram", "5")
    assert store.revoke("telegram", "5")
    assert "approve telegram" in acl.refusal("telegram", "5")  # revoked: told at once how to pair again


def test_a_stranger_spamming_a_chat_gets_one_reply(make_gateway, fake_telegram, provider_env, monkeypatch):
    monkeypatch.setenv("TELEGRAM_ALLOWED_USERS", "1001")
    make_gateway(telegram=fake_telegram)
    for i in range(5):
        fake_telegram.push_message(4242, 4242, f"let me in {i}")
    provider_env.queue(text("answer for the owner"))
    fake_telegram.push_message(1001, 1001, "hello")  # handled after the stranger's five (one poller)
    assert fake_telegram.wait_for_sent(1001) == ["answer for the owner"]
    sent = fake_telegram.sent_texts(4242)
    assert len(sent) == 1 and "hermes pairing approve telegram" in sent[0]
    assert provider_env.requests and all("let me in" not in str(r) for r in provider_env.requests)


def test_secrets_written_in_the_gateway_section_are_known_to_redaction():
    from hermes_core.config import parse_config
    from hermes_core.redact import config_secrets

    cfg = parse_config({"model": {"api_key": "sk-model-key-123456"}, "gateway": {
        "api_server": {"key": "api-server-key-123456", "api_key": "other-name-key-123456"},
        "telegram": {"token": "123456:telegram-token", "bot_token": "654321:telegram-token"}}})
    assert set(config_secrets(cfg)) == {"sk-model-key-123456", "api-server-key-123456",
                                        "other-name-key-123456", "123456:telegram-token",
                                        "654321:telegram-token"}
