"""Config mistakes are named (issue 21, item 4): unknown keys warn with the closest known key at
every start and in doctor (Hermes Agent's own keys never do), `config set` refuses a typo unless
--force and checks the value's type and range before anything is written."""
from __future__ import annotations

import pytest
import yaml

from hermes_core.config_keys import key_problem, unknown_keys
from tests.cli.conftest import hermes_env, run_hermes

TYPOS = "modle: fake-model\nmodel:\n  defualt: fake-model\n"
HERMES_AGENT_KEYS = """\
_config_version: 50
model: {provider: auto, streaming: true, ollama_num_ctx: 32768}
compression: {checkpoint_required: false, progress_notices: false}
terminal: {backend: local, home_mode: auto, container_cpu: 1}
agent: {reasoning_effort: medium, verbose: false}
auxiliary: {vision: {provider: auto, model: ""}, title_generation: {enabled: true}}
display: {compact: false, skin: default}
platform_toolsets: {cli: [hermes-cli]}
stt: {enabled: true}
"""


def test_unknown_keys_warn_once_at_start_naming_the_closest(fake_provider, hermes_home):
    (hermes_home / "config.yaml").write_text(TYPOS)
    env = hermes_env(fake_provider)
    res = run_hermes("-z", "hi", env=env)
    assert res.returncode == 0 and res.stdout == "ok\n", res.stderr
    warnings = [line for line in res.stderr.splitlines() if "unknown key" in line]
    assert len(warnings) == 2, res.stderr
    assert "`modle` (did you mean `model`?)" in warnings[0]
    assert "`model.defualt` (did you mean `model.default`?)" in warnings[1]
    res = run_hermes("sessions", "list", env=env)
    assert res.returncode == 0 and res.stderr.count("unknown key") == 2

    doc = run_hermes("doctor", env=env)
    line = next(x for x in doc.stdout.splitlines() if x[2:].startswith("config:"))
    assert line.startswith("⚠ config:") and "did you mean `model.default`" in line
    assert "`modle` (did you mean `model`?)" in line and doc.stderr.count("unknown key") == 0


def test_hermes_agent_keys_are_accepted_silently(fake_provider, hermes_home):
    (hermes_home / "config.yaml").write_text(HERMES_AGENT_KEYS)
    env = hermes_env(fake_provider)
    res = run_hermes("-z", "hi", env=env)
    assert res.returncode == 0 and "unknown key" not in res.stderr, res.stderr
    doc = run_hermes("doctor", env=env)
    assert any(x.startswith("✓ config:") for x in doc.stdout.splitlines()), doc.stdout


def test_config_set_refuses_a_typo_unless_forced(hermes_home):
    env = hermes_env(None)
    res = run_hermes("config", "set", "model.defualt", "x", env=env)
    assert res.returncode == 2
    assert "did you mean `model.default`?" in res.stderr and "--force" in res.stderr
    assert not (hermes_home / "config.yaml").exists()
    res = run_hermes("config", "set", "--force", "model.defualt", "x", env=env)
    assert res.returncode == 0, res.stderr
    assert yaml.safe_load((hermes_home / "config.yaml").read_text()) == {"model": {"defualt": "x"}}
    assert run_hermes("config", "set", "mcp_servers.t.command", "uvx", env=env).returncode == 0


@pytest.mark.parametrize("key,value,words", [
    ("gateway.api_server.port", "99999", "less than or equal to 65535"),
    ("gateway.api_server.port", "0", "greater than or equal to 1"),
    ("gateway.api_server.port", "eighty", "valid integer"),
    ("timezone", "Mars/Olympus", "not a time zone"),
    ("gateway.turn_limit", "lots", "whole number"),
    ("compression.threshold", "2", "less than or equal to 1"),
])
def test_config_set_checks_type_and_range(hermes_home, key, value, words):
    res = run_hermes("config", "set", key, value, env=hermes_env(None))
    assert res.returncode == 2 and words in res.stderr, res.stderr
    assert res.stderr.count("\n") == 1 and not (hermes_home / "config.yaml").exists()


def test_good_values_are_written(hermes_home):
    env = hermes_env(None)
    for key, value in (("gateway.api_server.port", "8643"), ("timezone", "Europe/Paris")):
        assert run_hermes("config", "set", key, value, env=env).returncode == 0
    data = yaml.safe_load((hermes_home / "config.yaml").read_text())
    assert data == {"gateway": {"api_server": {"port": 8643}}, "timezone": "Europe/Paris"}


def test_a_bad_time_zone_stops_every_command_not_just_cron(fake_provider, hermes_home):
    (hermes_home / "config.yaml").write_text("timezone: Mars/Olympus\n")
    res = run_hermes("-z", "hi", env=hermes_env(fake_provider))
    assert res.returncode == 2 and "`timezone` 'Mars/Olympus' is not a time zone" in res.stderr
    assert fake_provider.requests == []


def test_the_key_tree_is_pure():
    assert [u.path for u in unknown_keys(yaml.safe_load(HERMES_AGENT_KEYS))] == []
    found = unknown_keys({"gateway": {"api_sever": {}}, "store": {"url": "x", "pool": 3}})
    assert [(u.path, u.suggestion) for u in found] == [("gateway.api_sever", "gateway.api_server"),
                                                     ("store.pool", "store.pool_size")]
    assert key_problem("compression.protect_last_n") is None
    assert key_problem("modle.default").suggestion == "model.default"
    assert key_problem("model.default.deeper") is not None


@pytest.mark.parametrize("gateway, words", [
    ("junk", "`gateway` input should be a valid dictionary;"),
    ({"telegram": [1]}, "`gateway.telegram` input should be a valid dictionary;"),
    ({"turn_limit": "lots"}, "`gateway.turn_limit` must be a whole number >= 1 or 'auto'"),
    ({"turn_lease_wait": -1}, "`gateway.turn_lease_wait` input should be greater than or equal"),
    ({"api_server": {"idle_timeout": 0}}, "`gateway.api_server.idle_timeout` input should be"),
    ({"allowed_users": {"a": 1}}, "`gateway.allowed_users` must be a list"),
])
def test_gateway_settings_are_checked_when_the_file_is_read(gateway, words):
    from hermes_core.config import ConfigError, parse_config

    with pytest.raises(ConfigError) as err:
        parse_config({"gateway": gateway})
    line = str(err.value)
    assert words in line and "\n" not in line and "GatewayConfig" not in line
    assert line.endswith("<value>`")
