"""Pure parts of the gateway: message splitting, session keys, access decisions, pairing expiry."""
from __future__ import annotations

import pytest

from gateway.access import CODE_TTL_SECONDS, AccessControl, PairingStore, allowlisted
from gateway.platforms.api_server import APIServer, APIServerConfigError, is_loopback
from gateway.platforms.base import MessageEvent
from gateway.platforms.telegram import split_message, telegram_api_urls, utf16_len
from gateway.sessions import key_for_event, session_key
from tests.gateway.conftest import gateway_main, pairing_main


class Clock:
    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


# -- splitting ---------------------------------------------------------------------------------
def test_short_message_is_one_piece():
    assert split_message("hello") == ["hello"]
    assert split_message("") == [""]


def test_split_prefers_paragraph_boundaries():
    paras = [("p%d " % i) + "x" * 1500 for i in range(6)]
    pieces = split_message("\n\n".join(paras))
    assert all(utf16_len(p) <= 4096 for p in pieces)
    assert pieces == ["\n\n".join(paras[0:2]), "\n\n".join(paras[2:4]), "\n\n".join(paras[4:6])]


def test_split_falls_back_to_lines_spaces_then_hard():
    lines = "\n".join("line %d " % i + "y" * 90 for i in range(100))
    pieces = split_message(lines)
    assert all(len(p) <= 4096 for p in pieces) and all(p.startswith("line") for p in pieces)
    words = " ".join(["word"] * 3000)
    assert all(len(p) <= 4096 and not p.startswith(" ") for p in split_message(words))
    blob = "z" * 10_000
    pieces = split_message(blob)
    assert [len(p) for p in pieces] == [4096, 4096, 1808] and "".join(pieces) == blob


def test_split_counts_utf16_units():
    emoji = "\U0001F600" * 3000  # 2 UTF-16 units each
    pieces = split_message(emoji)
    assert all(utf16_len(p) <= 4096 for p in pieces) and "".join(pieces) == emoji
    assert len(pieces) == 2


def test_telegram_urls():
    assert telegram_api_urls("http://127.0.0.1:9/") == ("http://127.0.0.1:9/bot", "http://127.0.0.1:9/file/bot")
    assert telegram_api_urls(None)[0] == "https://api.telegram.org/bot"
    assert telegram_api_urls("http://h/bot")[0] == "http://h/bot"


# -- session keys ------------------------------------------------------------------------------
def test_session_keys():
    assert session_key("telegram", "dm", "42") == "telegram:dm:42"
    assert session_key("telegram", "group", "-100", "7") == "telegram:group:-100:7"
    assert session_key("telegram", "group", "-100", "7", thread_id="3") == "telegram:thread:-100:3:7"
    ev = MessageEvent(platform="telegram", chat_id="-5", user_id="9", text="hi", chat_type="group")
    assert key_for_event(ev) == "telegram:group:-5:9"
    assert session_key("x", "dm", "a:b") == "x:dm:a_b"


# -- access ------------------------------------------------------------------------------------
def test_deny_by_default_and_allowlists(hermes_home):
    acl = AccessControl(PairingStore(hermes_home), env={})
    assert not acl.is_allowed("telegram", "1")
    assert allowlisted("telegram", "1", {"TELEGRAM_ALLOWED_USERS": "3, 1"})
    assert not allowlisted("telegram", "2", {"TELEGRAM_ALLOWED_USERS": "3,1"})
    assert allowlisted("discord", "2", {"GATEWAY_ALLOWED_USERS": "2"})
    assert not allowlisted("discord", "2", {"TELEGRAM_ALLOWED_USERS": "2"})
    assert allowlisted("telegram", "anyone", {"TELEGRAM_ALLOWED_USERS": "*"})
    assert AccessControl(PairingStore(hermes_home), env={}, config_allowed={"telegram": {"8"}}).is_allowed("telegram", "8")


def test_pairing_codes_are_one_time_and_expire(hermes_home):
    clock = Clock()
    store = PairingStore(hermes_home, clock=clock)
    acl = AccessControl(store, env={})
    code = store.request_code("telegram", "7", "ann", "7")
    assert code and store.request_code("telegram", "7") == code  # reused while live
    assert code in acl.refusal("telegram", "7")
    assert store.approve("discord", code) is None  # codes are per platform
    assert store.approve("telegram", code.lower())["user_id"] == "7"
    assert acl.is_allowed("telegram", "7")
    assert store.approve("telegram", code) is None  # one-time
    late = store.request_code("telegram", "8")
    clock.t += CODE_TTL_SECONDS - 1
    assert store.list()["telegram"]["pending"].keys() == {late}
    clock.t += 2
    assert store.approve("telegram", late) is None  # expired
    assert store.request_code("telegram", "8") != late  # a new one after expiry
    assert store.revoke("telegram", "7") and not acl.is_allowed("telegram", "7")
    assert not store.revoke("telegram", "7")


def test_pairing_cli(hermes_home, capsys):
    assert pairing_main(["list"]) == 0 and "No pending" in capsys.readouterr().out
    assert pairing_main(["approve", "telegram", "NOPE1234"]) == 1
    code = PairingStore().request_code("telegram", "77", "zed")
    assert pairing_main(["approve", "telegram", code]) == 0
    assert "zed" in capsys.readouterr().out
    pairing_main(["list"])
    assert "approved\t77" in capsys.readouterr().out


# -- API server guard rails --------------------------------------------------------------------
def test_api_server_always_needs_a_key():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    for host in ("127.0.0.1", "0.0.0.0"):
        with pytest.raises(APIServerConfigError, match="API_SERVER_KEY"):
            APIServer(runner=None, host=host, port=0)
    APIServer(runner=None, host="0.0.0.0", port=0, key="k" * 32)  # with a key it may listen publicly


def test_gateway_status_and_nothing_to_run(hermes_home, capsys):
    assert gateway_main(["status"]) == 1
    assert "not running" in capsys.readouterr().out
    assert gateway_main(["run"]) == 2
    assert "nothing to run" in capsys.readouterr().err


# -- CLI: config errors and log redaction --------------------------------------------------------
def test_unreadable_config_is_one_line(hermes_home, capsys):
    (hermes_home / "config.yaml").write_bytes(b"model: \xff\xfe\n")
    assert gateway_main(["run", "--api-server", "--port", "0"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hermes gateway:") and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err and "config.yaml" in err


def test_config_error_anywhere_in_startup_is_one_line(hermes_home, capsys, monkeypatch):
    import hermes_cli.gateway_cmd as cli
    from hermes_core.config import ConfigError

    def bad(*_a, **_k):
        raise ConfigError("model.provider 'nope' is not a known provider")

    monkeypatch.setattr(cli, "load_env_file", bad)
    assert gateway_main(["run", "--api-server", "--port", "0"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "hermes gateway: model.provider 'nope' is not a known provider"
    monkeypatch.setattr(cli, "load_env_file", lambda *a, **k: None)
    import gateway.runner as runner

    monkeypatch.setattr(runner, "default_agent_factory", bad)  # raised inside the running event loop
    assert gateway_main(["run", "--api-server", "--port", "0"]) == 1
    err = capsys.readouterr().err  # (the console log says where the log file is, then the one error line)
    assert [line for line in err.splitlines() if "nope" in line] == [
        "hermes gateway: model.provider 'nope' is not a known provider"]
    assert "Traceback" not in err


def test_exception_tracebacks_in_the_log_are_redacted(hermes_home):
    import logging

    from gateway.logs import RedactSecrets, setup_logging

    token = "123456789:AAH-secret-bot-token"
    path, handlers = setup_logging(RedactSecrets([token]), verbose=False)
    try:
        log = logging.getLogger("gateway.test_redaction")
        try:
            raise RuntimeError(f"GET https://api.telegram.org/bot{token}/getUpdates failed")
        except RuntimeError:
            log.exception("polling failed")
        log.error("plain %s", token)
    finally:
        for h in handlers:
            logging.getLogger().removeHandler(h)
            h.close()
    content = path.read_text()
    assert "polling failed" in content and "Traceback" in content and "RuntimeError" in content
    assert token not in content and "bot***/getUpdates" in content
