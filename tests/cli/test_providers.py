"""Provider names, keys and models as a new user meets them (issue 21, items 3 and 5): unknown
names are usage errors listing the known ones, a missing key is named before anything is sent, a
missing model is asked of the endpoint, and `hermes doctor` says what a run would do."""
from __future__ import annotations

import pytest

from hermes_core import provider_table as catalog
from tests.cli.conftest import hermes_env, run_hermes
from tests.fake_provider import error, text


def _doctor_line(env: dict, name: str = "provider") -> str:
    res = run_hermes("doctor", env=env)
    return next(line for line in res.stdout.splitlines() if line[2:].startswith(name + ":"))


def test_unknown_provider_is_a_usage_error_listing_the_known_ones(fake_provider):
    env = hermes_env(fake_provider)
    res = run_hermes("--provider", "bogus", "-z", "hi", env=env)
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "unknown provider 'bogus'" in res.stderr
    assert all(name in res.stderr for name in ("local", "custom", "openai", "openrouter"))
    assert fake_provider.requests == []

    env["HERMES_PROVIDER"] = "bogus"
    res = run_hermes("-z", "hi", env=env)
    assert res.returncode == 2 and "unknown provider 'bogus' (from HERMES_PROVIDER)" in res.stderr
    line = _doctor_line(env)  # doctor agrees with the run, no "embedded local model"
    assert line.startswith("✗ provider:") and "unknown provider 'bogus'" in line
    assert fake_provider.requests == []


def test_a_provider_that_needs_a_key_says_which_variable_before_any_request(fake_provider):
    env = hermes_env(None)
    for args in (("--provider", "openrouter", "-z", "hi"),
                 ("--provider", "openai", "chat", "-q", "hi")):
        res = run_hermes(*args, env=env)
        assert res.returncode == 2, res.stderr
        var = "OPENROUTER_API_KEY" if "openrouter" in args else "OPENAI_API_KEY"
        assert f"needs an API key and none is set: set {var}" in res.stderr
    env["HERMES_PROVIDER"] = "openrouter"
    assert "set OPENROUTER_API_KEY" in _doctor_line(env)
    env["OPENROUTER_API_KEY"] = "or-key"
    env["OPENAI_BASE_URL"] = fake_provider.base_url  # an OpenRouter-compatible URL of our own
    fake_provider.queue(text("keyed"))
    res = run_hermes("-z", "hi", "-m", "some/model", env=env)
    assert res.returncode == 0 and res.stdout == "keyed\n", res.stderr
    assert fake_provider.request_headers[-1]["authorization"] == "Bearer or-key"


def test_custom_provider_without_a_url_says_how_to_give_one(hermes_home):
    res = run_hermes("--provider", "custom", "-z", "hi", env=hermes_env(None))
    assert res.returncode == 2 and "needs a base URL" in res.stderr and "--base-url" in res.stderr


def test_no_model_configured_uses_the_one_the_endpoint_serves(fake_provider):
    env = hermes_env(fake_provider)  # OPENAI_BASE_URL only, no model anywhere
    fake_provider.queue(text("hello"))
    res = run_hermes("-z", "hi", env=env)
    assert res.returncode == 0, res.stderr
    assert fake_provider.requests[-1]["model"] == "fake-model"  # /v1/models' one, not "default"
    assert "model fake-model" in _doctor_line(env)


def test_several_served_models_make_z_say_which_to_pick(fake_provider):
    fake_provider.models = ["alpha-7b", "beta-70b"]
    env = hermes_env(fake_provider)
    res = run_hermes("-z", "hi", env=env)
    assert res.returncode == 2
    assert "serves 2: alpha-7b, beta-70b" in res.stderr and "-m NAME" in res.stderr
    assert fake_provider.requests == []
    assert "serves 2" in _doctor_line(env)
    fake_provider.queue(text("picked"))
    res = run_hermes("-z", "hi", "-m", "beta-70b", env=env)
    assert res.returncode == 0 and fake_provider.requests[-1]["model"] == "beta-70b"


def test_a_404_for_the_model_hints_at_the_name_and_the_v1_suffix(fake_provider):
    fake_provider.queue(error(404, "The model `gpt-9` does not exist", type="invalid_request_error",
                              code="model_not_found"))
    res = run_hermes("-z", "hi", "-m", "gpt-9", env=hermes_env(fake_provider))
    assert res.returncode == 1
    assert "check the model name" in res.stderr and "ends in /v1" in res.stderr
    assert "gpt-9" in res.stderr and fake_provider.base_url in res.stderr


def test_the_table_is_one_place():
    assert set(catalog.PROVIDERS) == {"local", "custom", "openai", "openrouter", "anthropic"}
    assert catalog.lookup("claude").name == "anthropic"  # a plugin's own alias
    assert catalog.lookup("auto") is None and catalog.lookup("Ollama").name == "custom"
    assert catalog.PROVIDERS["openrouter"].key_var == "OPENROUTER_API_KEY"
    assert catalog.PROVIDERS["openai"].needs_key and not catalog.PROVIDERS["custom"].needs_key
    with pytest.raises(catalog.UnknownProvider, match="did you mean openrouter"):
        catalog.lookup("openroutr")
    assert catalog.detect(None, None, {"OPENROUTER_API_KEY": "k"}).name == "openrouter"
    assert catalog.detect(None, None, {}).name == "local"
    assert catalog.detect("http://x/v1", None, {}).name == "custom"
    assert catalog.detect(None, None, {"ANTHROPIC_API_KEY": "k"}).name == "anthropic"
