"""`hermes setup` as a new user runs it (issue 21, items 5, 6 and 7): the URL is normalised and its
models list asked for, the model comes from that list, nothing is written world-readable, and a
connection error later names the URL (never its secrets)."""
from __future__ import annotations

import stat
import sys

import pexpect
import yaml

from tests.cli.conftest import ROOT, hermes_env, run_hermes


def _setup(*flags: str, env: dict) -> "object":
    return run_hermes("setup", "--non-interactive", "--provider", "custom", *flags, env=env)


def _model_section(home) -> dict:
    return yaml.safe_load((home / "config.yaml").read_text())["model"]


def test_setup_adds_scheme_and_v1_probes_and_says_what_it_found(fake_provider, hermes_home):
    bare = f"127.0.0.1:{fake_provider.port}"
    res = _setup("--base-url", bare, env=hermes_env())
    assert res.returncode == 0, res.stderr
    assert "no scheme given" in res.stdout and "/v1" in res.stdout
    assert f"✓ {fake_provider.base_url} answers: 1 model (fake-model)" in res.stdout
    assert _model_section(hermes_home) == {"provider": "custom", "base_url": fake_provider.base_url,
                                           "default": "fake-model"}  # never "default: default"
    res = _setup("--base-url", f"http://{bare}/", env=hermes_env())
    assert res.returncode == 0 and _model_section(hermes_home)["base_url"] == fake_provider.base_url


def test_setup_of_an_unreachable_url_says_so_and_writes_no_made_up_model(hermes_home):
    env = hermes_env(None, HERMES_SETUP_TIMEOUT="2")
    res = _setup("--base-url", "http://127.0.0.1:9/v1", env=env)
    assert res.returncode == 0, res.stderr
    assert "could not reach http://127.0.0.1:9/v1" in res.stdout
    assert _model_section(hermes_home) == {"provider": "custom",
                                           "base_url": "http://127.0.0.1:9/v1"}


def test_setup_with_several_models_needs_a_choice(fake_provider, hermes_home):
    fake_provider.models = ["alpha-7b", "beta-70b"]
    res = _setup("--base-url", fake_provider.base_url, env=hermes_env())
    assert res.returncode == 2 and "serves 2: alpha-7b, beta-70b" in res.stderr
    assert not (hermes_home / "config.yaml").exists()

    child = pexpect.spawn(sys.executable, ["-m", "hermes_cli.main", "setup"], env=hermes_env(None),
                          cwd=str(ROOT), encoding="utf-8", timeout=30)
    child.expect("Choose 1, 2 or 3")
    child.sendline("2")
    child.expect("Base URL")
    child.sendline(fake_provider.base_url)
    child.expect("API key")
    child.sendline("")
    child.expect(r"2\) beta-70b")
    child.expect(r"Model \(number or name\)")
    child.sendline("2")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert _model_section(hermes_home)["default"] == "beta-70b"


def test_setup_creates_a_private_home_and_config(fake_provider, tmp_path):
    home = tmp_path / "brand" / "new-home"
    res = _setup("--base-url", fake_provider.base_url, env=hermes_env(None, HERMES_HOME=str(home)))
    assert res.returncode == 0, res.stderr
    assert not (home / ".env").exists()  # no key saved: only config.yaml
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "config.yaml").stat().st_mode) == 0o600
    doc = run_hermes("doctor", env=hermes_env(None, HERMES_HOME=str(home)))
    assert "✓ permissions:" in doc.stdout, doc.stdout


def test_connection_errors_name_the_url_without_its_secrets(hermes_home):
    url = "http://someone:hunter2pass@127.0.0.1:9/v1?api_key=sk-query-secret"
    env = hermes_env(None, OPENAI_BASE_URL=url, OPENAI_API_KEY="k")
    res = run_hermes("-z", "hi", "-m", "m", env=env)
    assert res.returncode == 1
    assert "Could not reach the provider at http://someone@127.0.0.1:9/v1" in res.stderr
    assert "hunter2pass" not in res.stderr and "sk-query-secret" not in res.stderr
