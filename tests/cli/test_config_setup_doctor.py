"""`hermes config`, `hermes setup --non-interactive` and `hermes doctor` as real subprocesses."""
from __future__ import annotations

import stat

import yaml

from tests.cli.conftest import hermes_env, run_hermes

SECRET = "sk-test-abcdefghijklmnop-9876"


def _mode(p) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_config_set_get_round_trip(hermes_home):
    env = hermes_env()
    assert run_hermes("config", "path", env=env).stdout.strip() == str(hermes_home / "config.yaml")
    for key, value in (("model.default", "my-model"), ("compression.threshold", "0.7"),
                       ("agent.max_turns", "12"), ("compression.enabled", "false")):
        res = run_hermes("config", "set", key, value, env=env)
        assert res.returncode == 0, res.stderr
    data = yaml.safe_load((hermes_home / "config.yaml").read_text())
    assert data == {"model": {"default": "my-model"}, "compression": {"threshold": 0.7, "enabled": False},
                    "agent": {"max_turns": 12}}
    assert run_hermes("config", "get", "compression.threshold", env=env).stdout == "0.7\n"
    assert run_hermes("config", "get", "compression.enabled", env=env).stdout == "false\n"
    assert run_hermes("config", "get", "terminal.timeout", env=env).stdout == "180\n"  # a default

    bad = run_hermes("config", "set", "compression.threshold", "7", env=env)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "compression.threshold" in bad.stderr
    assert yaml.safe_load((hermes_home / "config.yaml").read_text())["compression"]["threshold"] == 0.7
    missing = run_hermes("config", "get", "no.such.key", env=env)
    assert missing.returncode == 1 and missing.stderr.startswith("hermes: error:")


def test_secret_goes_to_env_file_and_is_masked(hermes_home):
    env = hermes_env()
    res = run_hermes("config", "set", "model.api_key", SECRET, env=env)
    assert res.returncode == 0, res.stderr
    assert SECRET not in res.stdout
    envfile = hermes_home / ".env"
    assert _mode(envfile) == 0o600
    assert f"OPENAI_API_KEY={SECRET}" in envfile.read_text()
    assert not (hermes_home / "config.yaml").exists() or SECRET not in (hermes_home / "config.yaml").read_text()
    for args in (("config", "show"), ("config", "get", "model.api_key")):
        out = run_hermes(*args, env=env)
        assert out.returncode == 0 and SECRET not in out.stdout and "9876" in out.stdout

    # a plain-text secret already in config.yaml moves to .env on the next set
    (hermes_home / "config.yaml").write_text("gateway:\n  telegram:\n    token: plain-token-123456789\n")
    assert run_hermes("config", "set", "gateway.telegram.token", "new-token-123456789", env=env).returncode == 0
    assert "token" not in (hermes_home / "config.yaml").read_text()
    assert "TELEGRAM_BOT_TOKEN=new-token-123456789" in envfile.read_text()
    assert _mode(envfile) == 0o600


def test_only_real_secrets_go_to_env(hermes_home):
    env = hermes_env()
    assert run_hermes("config", "set", "compression.threshold_tokens", "5000", env=env).returncode == 0
    assert yaml.safe_load((hermes_home / "config.yaml").read_text()) == {"compression": {"threshold_tokens": 5000}}
    assert run_hermes("config", "get", "compression.threshold_tokens", env=env).stdout == "5000\n"
    assert run_hermes("config", "set", "auxiliary.compression.api_key", SECRET, env=env).returncode == 0
    assert f"HERMES_AUX_COMPRESSION_API_KEY={SECRET}" in (hermes_home / ".env").read_text()
    assert SECRET not in (hermes_home / "config.yaml").read_text()


def test_show_masks_header_and_env_secrets_of_mcp_servers(hermes_home):
    (hermes_home / "config.yaml").write_text(
        "mcp_servers:\n  gh:\n    url: http://127.0.0.1:9/mcp\n"
        "    headers: {Authorization: Bearer ghp-abcdefghijkl-4321, X-API-Key: xk-abcdefghijkl-8765}\n"
        "    env: {GITHUB_TOKEN: gt-abcdefghijkl-1357}\n")
    out = run_hermes("config", "show", env=hermes_env())
    assert out.returncode == 0, out.stderr
    for secret in ("ghp-abcdefghijkl", "xk-abcdefghijkl", "gt-abcdefghijkl"):
        assert secret not in out.stdout
    assert "http://127.0.0.1:9/mcp" in out.stdout  # only secrets are masked


def test_setup_non_interactive_then_doctor(fake_provider, hermes_home):
    env = hermes_env()  # no OPENAI_* in the environment: setup must be what configures it
    res = run_hermes("setup", "--non-interactive", "--provider", "custom", "--base-url", fake_provider.base_url,
                     "--model", "fake-model", "--api-key", SECRET, env=env)
    assert res.returncode == 0, res.stderr
    assert SECRET not in res.stdout
    cfg = yaml.safe_load((hermes_home / "config.yaml").read_text())
    assert cfg["model"] == {"provider": "custom", "base_url": fake_provider.base_url, "default": "fake-model"}
    assert _mode(hermes_home / ".env") == 0o600 and SECRET in (hermes_home / ".env").read_text()

    doc = run_hermes("doctor", env=env)
    assert doc.returncode == 0, doc.stdout + doc.stderr
    lines = doc.stdout.splitlines()
    assert any(line.startswith("✓ config:") for line in lines)
    assert any(line.startswith("✓ provider:") and "1 model listed" in line for line in lines)
    assert any(line.startswith("✓ session store:") for line in lines)
    assert any(line.startswith(("✓ local model:", "– local model:")) for line in lines)
    assert SECRET not in doc.stdout

    fake_provider.queue("configured by setup")
    res = run_hermes("-z", "hi", env=env)
    assert res.returncode == 0 and res.stdout == "configured by setup\n"
    assert fake_provider.request_headers[-1].get("authorization") == f"Bearer {SECRET}"


def test_setup_rejects_incomplete_flags(hermes_home):
    res = run_hermes("setup", "--non-interactive", "--provider", "custom", env=hermes_env())
    assert res.returncode == 2 and "--base-url" in res.stderr
    res = run_hermes("setup", "--non-interactive", "--provider", "bogus", env=hermes_env())
    assert res.returncode == 2 and "unknown provider" in res.stderr
    assert not (hermes_home / "config.yaml").exists()


def test_doctor_reports_problems_with_fixes(hermes_home):
    env = hermes_env(None, OPENAI_BASE_URL="http://127.0.0.1:9/v1", OPENAI_API_KEY="test",
                     HERMES_DOCTOR_TIMEOUT="2")
    (hermes_home / ".env").write_text("OPENAI_API_KEY=test\n")
    (hermes_home / ".env").chmod(0o644)
    res = run_hermes("doctor", env=env)
    assert res.returncode == 1
    lines = res.stdout.splitlines()
    assert any(line.startswith("✗ provider:") and "cannot reach" in line and "fix:" in line for line in lines)
    assert any(line.startswith("✗ secrets:") and "chmod 600" in line for line in lines)
    assert "Traceback" not in res.stdout + res.stderr

    (hermes_home / "config.yaml").write_text("model: {default: [\n")
    res = run_hermes("doctor", env=env)
    assert res.returncode == 1
    assert any(line.startswith("✗ config:") for line in res.stdout.splitlines())
    assert any(line.startswith("✓ session store:") for line in res.stdout.splitlines())
