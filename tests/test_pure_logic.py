"""Pure logic tested directly: error classification, token estimates, config and provider resolution."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from hermes_core.config import ConfigError, load_config, parse_config
from hermes_core.provider_settings import resolve_provider
from agent.error_classifier import ErrorKind, classify_error, parse_context_limit
from hermes_core.retry import jittered_backoff
from hermes_core.tokens import (IMAGE_TOKENS, estimate_messages_tokens_rough, estimate_request_tokens_rough,
                          estimate_text_tokens)


def _err(message: str, status=None, headers=None):
    exc = Exception(message)
    if status is not None:
        exc.status_code = status
    if headers is not None:
        exc.response = SimpleNamespace(status_code=status, headers=headers)
    return exc


class NamedTimeout(Exception):
    pass


NamedTimeout.__name__ = "APITimeoutError"


@pytest.mark.parametrize("exc, kind", [
    (_err("slow down", 429), ErrorKind.RATE_LIMIT),
    (_err("boom", 500), ErrorKind.SERVER),
    (_err("bad gateway", 502), ErrorKind.SERVER),
    (_err("Incorrect API key provided", 401), ErrorKind.AUTH),
    (_err("forbidden", 403), ErrorKind.AUTH),
    (_err("Request entity too large", 413), ErrorKind.PAYLOAD_TOO_LARGE),
    (_err("unknown parameter 'foo'", 400), ErrorKind.CLIENT),
    (_err("model not found", 404), ErrorKind.CLIENT),
    (TimeoutError("read timed out"), ErrorKind.TIMEOUT),
    (NamedTimeout("Request timed out."), ErrorKind.TIMEOUT),
    (ConnectionResetError("peer reset"), ErrorKind.CONNECTION),
    (ValueError("something odd"), ErrorKind.UNKNOWN),
])
def test_classify_error_kinds(exc, kind):
    assert classify_error(exc).kind is kind


@pytest.mark.parametrize("text, limit", [
    ("Error code: 400 - {'error': {'message': 'prompt is too long: 233153 tokens > 200000 maximum'}}", 200_000),
    ("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", 8192),
    ("context_length_exceeded: Please reduce the length of the messages.", None),
    ("Input is too long for requested model, context window of 32,768", 32_768),
])
def test_context_overflow_is_recognised_and_the_limit_parsed(text, limit):
    c = classify_error(_err(text, 400))
    assert c.kind is ErrorKind.CONTEXT_OVERFLOW and c.context_limit == limit
    assert not c.retryable


def test_overflow_without_a_status_code_is_still_overflow():
    c = classify_error(Exception("Error code: 400 - prompt is too long: 300 tokens > 256 maximum"))
    assert c.kind is ErrorKind.CONTEXT_OVERFLOW and c.status == 400 and c.context_limit == 256


def test_retry_after_header_is_read():
    c = classify_error(_err("rate limited", 429, headers={"retry-after": "7"}))
    assert c.retryable and c.retry_after == 7.0
    assert classify_error(_err("x", 429, headers={"retry-after": "soon"})).retry_after is None


def test_parse_context_limit_ignores_small_numbers():
    assert parse_context_limit("limit is 12 tokens") is None


def test_jittered_backoff_grows_and_honours_retry_after():
    assert jittered_backoff(1, retry_after=3) == 3
    assert jittered_backoff(1, retry_after=10_000) == 120.0  # a hostile header cannot stall us for hours
    first = [jittered_backoff(1) for _ in range(50)]
    fourth = [jittered_backoff(4) for _ in range(50)]
    assert all(0.5 <= d <= 1.0 for d in first) and all(4.0 <= d <= 8.0 for d in fourth)
    assert max(jittered_backoff(20) for _ in range(20)) <= 30.0


def test_token_estimates():
    assert estimate_text_tokens("") == 0
    assert estimate_text_tokens("a" * 400) == 100
    assert estimate_text_tokens("你好世界") == 4 + 0  # about one token per CJK character
    mixed = estimate_text_tokens("abcd" * 10 + "漢字")
    assert mixed == 2 + 10
    img = [{"role": "user", "content": [{"type": "text", "text": "a" * 40},
                                         {"type": "image_url", "image_url": {"url": "data:..."}}]}]
    assert estimate_messages_tokens_rough(img) == 4 + 10 + IMAGE_TOKENS
    for text in ("", "a", "abcde", "x" * 19_999, "x" * 20_000, "café", "你好" * 9_000):
        # a message of plain text is its text's estimate plus the per-message overhead
        assert estimate_messages_tokens_rough([{"role": "user", "content": text}]) == \
            4 + estimate_text_tokens(text)
    call = [{"role": "assistant", "content": None,
             "tool_calls": [{"id": "c", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]}]
    assert estimate_messages_tokens_rough(call) > 4
    msgs = [{"role": "user", "content": "a" * 40}]
    tools = [{"type": "function", "function": {"name": "x", "description": "d" * 400, "parameters": {}}}]
    assert estimate_request_tokens_rough(msgs, system_prompt="s" * 40, tools=tools) > \
        estimate_request_tokens_rough(msgs) + 100


def test_junk_config_gives_one_clear_error(tmp_path):
    bad = tmp_path / "config.yaml"
    bad.write_text("model: [unclosed\n")
    with pytest.raises(ConfigError, match=r"not valid YAML \(line 2"):
        load_config(bad)
    bad.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="must be a YAML mapping"):
        load_config(bad)
    with pytest.raises(ConfigError, match="compression.threshold"):
        parse_config({"compression": {"threshold": "lots"}})


def test_config_defaults_and_clamps():
    cfg = parse_config({"compression": {"max_attempts": 99}, "unknown_section": {"kept": True}})
    assert cfg.compression.max_attempts == 10 and cfg.compression.threshold == 0.5
    assert parse_config({"compression": {"max_attempts": 0}}).compression.max_attempts == 1


def test_provider_precedence(monkeypatch):
    cfg = parse_config({"model": {"provider": "custom", "base_url": "http://cfg/v1", "default": "cfg-model",
                                  "api_key": "cfg-key"}})
    s = resolve_provider(cfg)
    assert (s.provider, s.base_url, s.model, s.api_key) == ("custom", "http://cfg/v1", "cfg-model", "cfg-key")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    s = resolve_provider(cfg)
    assert (s.base_url, s.api_key) == ("http://env/v1", "env-key")
    s = resolve_provider(cfg, base_url="http://flag/v1", model="flag-model")
    assert (s.base_url, s.model) == ("http://flag/v1", "flag-model")


def test_nothing_configured_means_the_local_model():
    s = resolve_provider(parse_config({}))
    assert s.provider == "local" and s.base_url is None


def test_openrouter_key_alone_selects_openrouter(monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-key")
    s = resolve_provider(parse_config({}))
    assert s.provider == "openrouter" and s.api_key == "or-key" and "openrouter" in s.base_url


def test_tool_arguments_with_a_raw_newline_inside_a_string_are_accepted():
    # small models (and grammar-constrained ones) emit literal newlines in JSON strings; strict
    # JSON rejects them, and the call would be lost over a formality
    from agent.tool_runner import parse_arguments

    args, err = parse_arguments('{"command": "echo hi", "workdir": "a\nb"}')
    assert err is None and args == {"command": "echo hi", "workdir": "a\nb"}
    assert parse_arguments("{not json")[0] is None


def test_secret_values_read_the_environment_afresh_each_call(monkeypatch):
    """Names are matched once (a cache); values are not: a key set or changed later is masked."""
    from hermes_core.redact import secret_values
    monkeypatch.setenv("ACME_API_KEY", "first-value-123")
    monkeypatch.setenv("ACME_REGION", "eu-west-1-long")
    assert "first-value-123" in secret_values() and "eu-west-1-long" not in secret_values()
    monkeypatch.setenv("ACME_API_KEY", "second-value-456")
    monkeypatch.setenv("LATER_TOKEN", "later-token-789")
    found = secret_values(["extra-secret-000"])
    assert {"second-value-456", "later-token-789", "extra-secret-000"} <= set(found)
    assert "first-value-123" not in found
    monkeypatch.delenv("LATER_TOKEN")
    assert "later-token-789" not in secret_values()
