"""`hermes gateway setup` as a real CLI subprocess (issue 24): answers on stdin or flags, values
checked for shape and then live against the loopback Bot API fake and a real Synapse, .env
written 0600, secrets never printed, a failed check writes nothing; a webhook lands in config.yaml
with its secret in .env."""
from __future__ import annotations

import stat
import uuid

import pytest
import yaml

from gateway.platforms.shapes import problem
from tests.cli.conftest import hermes_env, run_hermes
from tests.gateway.fake_telegram import FakeTelegram

TOKEN = "7312345678:AAHf3kQ_example-token-for-tests-0123"


def env_file(home) -> dict[str, str]:
    from dotenv import dotenv_values

    path = home / ".env"
    return dict(dotenv_values(path)) if path.is_file() else {}


@pytest.fixture(scope="module")
def bot_api():
    fake = FakeTelegram(token=TOKEN).start()
    yield fake
    fake.stop()


def test_telegram_from_stdin_answers_checked_live(hermes_home, bot_api):
    env = hermes_env(None, TELEGRAM_BASE_URL=bot_api.base_url)
    answers = "not-a-token\n" + TOKEN + "\n1001, 2002\n"  # the first token is asked again
    res = run_hermes("gateway", "setup", "telegram", env=env, input=answers)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "✗ TELEGRAM_BOT_TOKEN: the value does not look right; expected <bot id>:" in res.stdout
    assert "✓ telegram: connected" in res.stdout
    assert TOKEN not in res.stdout + res.stderr and "not-a-token" not in res.stdout
    assert env_file(hermes_home) == {"TELEGRAM_BOT_TOKEN": TOKEN,
                                     "TELEGRAM_ALLOWED_USERS": "1001, 2002"}
    assert stat.S_IMODE((hermes_home / ".env").stat().st_mode) == 0o600
    assert any(name == "getMe" for name, _ in bot_api.calls)


def test_a_refused_token_writes_nothing(hermes_home, bot_api):
    wrong = "7312345678:AAHf3kQ_this-token-is-not-the-bots-9999"
    env = hermes_env(None, TELEGRAM_BASE_URL=bot_api.base_url)
    res = run_hermes("gateway", "setup", "telegram", "webhook", "--non-interactive",
                     "--set", f"TELEGRAM_BOT_TOKEN={wrong}", "--set", "WEBHOOK_NAME=shop",
                     "--set", "WEBHOOK_SIGNATURE=stripe",
                     "--set", "WEBHOOK_DELIVER=telegram:1001", env=env)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "✗ telegram: the check failed" in res.stdout and "nothing was written" in res.stdout
    assert wrong not in res.stdout + res.stderr
    saved = env_file(hermes_home)
    assert "TELEGRAM_BOT_TOKEN" not in saved  # the webhook after it is still saved
    hook = yaml.safe_load((hermes_home / "config.yaml").read_text())["gateway"]["webhooks"]
    assert hook == {"shop": {"secret_env": "SHOP_WEBHOOK_SECRET", "deliver": "telegram:1001",
                             "signature": "stripe"}}
    assert len(saved["SHOP_WEBHOOK_SECRET"]) == 64
    assert saved["SHOP_WEBHOOK_SECRET"] not in res.stdout
    res = run_hermes("gateway", "setup", "webhook", "--non-interactive", "--set",
                     "WEBHOOK_SIGNATURE=svix", "--set", "WEBHOOK_DELIVER=local", env=env)
    assert res.returncode == 1 and "signature is one of github, stripe" in res.stdout


def test_matrix_checked_against_synapse(hermes_home, synapse):
    made = synapse.register(f"setup-{uuid.uuid4().hex[:8]}", "correct horse battery")
    env = hermes_env(None)
    flags = ["--set", f"MATRIX_HOMESERVER={synapse.url}",
             "--set", f"MATRIX_USER_ID={made['user_id']}"]
    res = run_hermes("gateway", "setup", "matrix", "--non-interactive", *flags,
                     "--set", "MATRIX_ACCESS_TOKEN=syt_wrong_token_000000", env=env)
    assert res.returncode == 1 and "✗ matrix: the check failed" in res.stdout, res.stdout
    assert "syt_wrong_token_000000" not in res.stdout + res.stderr
    assert env_file(hermes_home) == {}
    res = run_hermes("gateway", "setup", "matrix", "--non-interactive", *flags,
                     "--set", f"MATRIX_ACCESS_TOKEN={made['access_token']}", env=env)
    assert res.returncode == 0 and "✓ matrix: connected" in res.stdout, res.stdout + res.stderr
    assert made["access_token"] not in res.stdout + res.stderr
    assert env_file(hermes_home)["MATRIX_ACCESS_TOKEN"] == made["access_token"]


def test_shapes_name_the_wrong_kind_of_value():
    assert problem("SLACK_BOT_TOKEN", "xapp-1-A0-1", secret=True) == \
        "SLACK_BOT_TOKEN: the value does not look right; expected xoxb-…, the Bot User OAuth Token"
    assert problem("SLACK_APP_TOKEN", "xapp-1-A0123-456-abc") is None
    assert problem("DISCORD_BOT_TOKEN", "abc", secret=True).endswith("Reset Token)")
    assert problem("MATRIX_USER_ID", "hermes") == \
        "MATRIX_USER_ID: 'hermes' does not look right; expected @name:server"
    assert problem("MATRIX_HOMESERVER", "matrix.org").endswith("https://matrix.example.org")
    assert problem("EMAIL_ALLOWED_USERS", "a@x.org, b@y.org") is None
    assert "stray spaces" in problem("TELEGRAM_BOT_TOKEN", TOKEN + " ", secret=True)
    assert problem("SOMETHING_ELSE", "anything") is None
