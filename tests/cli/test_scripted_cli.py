"""The CLI the way a script drives it (issue 13 item 6): `NO_COLOR=1 TERM=dumb`, stdout parsed as plain
text, exit 0 on success, non-zero with exactly one line on stderr on failure."""
from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from hermes_state import SessionDB
from tests.cli.conftest import hermes_env, run_hermes
from tests.fake_provider import rate_limited, text

ESCAPES = re.compile(r"[\x1b\r\b]")  # ANSI sequences, spinners' carriage returns and backspaces


@pytest.fixture
def script(fake_provider):
    """Run `hermes ARGS` as a script would; every output is checked for terminal control codes."""
    env = hermes_env(fake_provider, TERM="dumb", NO_COLOR="1")

    def run(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        res = run_hermes(*args, env={**env, **(env_extra or {})})
        assert not ESCAPES.search(res.stdout + res.stderr), (res.stdout, res.stderr)
        assert "Traceback" not in res.stderr
        return res

    return run


def ok(res: subprocess.CompletedProcess) -> str:
    assert res.returncode == 0, res.stderr
    assert res.stderr == "", res.stderr
    return res.stdout


def one_error_line(res: subprocess.CompletedProcess, *words: str) -> str:
    """A failure: non-zero, nothing half-printed on stdout, ONE line on stderr naming the problem."""
    assert res.returncode != 0, res.stdout
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and res.stderr.endswith("\n"), res.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def test_version(script):
    out = ok(script("--version"))
    assert re.fullmatch(r"hermes \d+\.\d+\.\d+\S*\n", out), out


def test_z_prints_the_answer_alone_and_takes_a_model(script, fake_provider):
    fake_provider.queue(text("Paris"))
    assert ok(script("-z", "capital of France? one word", "-m", "other-model")) == "Paris\n"
    assert fake_provider.requests[-1]["model"] == "other-model"


def test_z_failure_after_retries_is_one_line(script, fake_provider):
    fake_provider.queue(*[rate_limited(0) for _ in range(4)])  # Retry-After: 0, so no waiting
    res = script("-z", "hi")
    assert res.stdout == ""
    one_error_line(res, "hermes: error:")
    assert len(fake_provider.requests) == 4  # it did retry; the retries just were not narrated


def test_doctor_ok_then_one_line_when_something_is_wrong(script, hermes_home):
    hermes_home.chmod(0o700)  # as any earlier hermes command leaves it
    out = ok(script("doctor"))
    lines = out.splitlines()
    assert lines[-1] == "all good"
    assert all(line[:2] in ("✓ ", "– ") for line in lines[:-1]), lines

    res = script("doctor", env_extra={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "HERMES_DOCTOR_TIMEOUT": "2"})
    assert res.returncode == 1
    assert any(line.startswith("✗ provider:") for line in res.stdout.splitlines())
    one_error_line(res, "1 problem found", "provider")


def test_gateway_status_when_not_running(script):
    res = script("gateway", "status")
    assert res.returncode == 1 and res.stdout.startswith("gateway: not running")
    one_error_line(res, "not running", "hermes gateway run")
    res = script("gateway", "status", "--json")
    assert res.returncode == 1 and json.loads(res.stdout) == {"state": "never started"}


def test_sessions_list_limit_and_json(script, hermes_home):
    db = SessionDB()
    for n in range(3):
        sid = db.create_session(source="cli")
        db.append_message(sid, "user", f"question number {n}")
        time.sleep(0.01)  # distinct updated_at, so "newest first" is a defined order
    db.close()
    table = ok(script("sessions", "list", "--limit", "2")).splitlines()
    assert table[0].split()[:2] == ["ID", "UPDATED"] and len(table) == 3
    assert "question number 2" in table[1] and "question number 1" in table[2]

    rows = json.loads(ok(script("sessions", "list", "--limit", "2", "--json")))
    assert isinstance(rows, list) and len(rows) == 2 and all(isinstance(r, dict) for r in rows)
    assert [r["preview"] for r in rows] == ["question number 2", "question number 1"]
    assert rows[0]["id"] == table[1].split()[0] and rows[0]["source"] == "cli"
    assert rows[0]["message_count"] == 1 and isinstance(rows[0]["started_at"], float)
    assert "system_prompt" not in rows[0]
    assert json.loads(ok(script("sessions", "list", "--source", "telegram", "--json"))) == []


# every listing command that exists takes --json and prints a JSON array of objects on stdout
LISTINGS = [("sessions", "list"), ("skills", "list"), ("mcp", "list", "--no-connect")]


@pytest.mark.parametrize("listing", LISTINGS, ids=" ".join)
def test_listings_in_json_are_arrays_of_objects(script, hermes_home, listing):
    SessionDB().create_session(source="cli")  # something to list besides the bundled skills
    (hermes_home / "config.yaml").write_text("mcp_servers:\n  demo: {command: 'true', enabled: false}\n")
    rows = json.loads(ok(script(*listing, "--json")))
    assert isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows)


def test_config_get_prints_the_value_alone_and_set_writes_it(script):
    assert ok(script("config", "get", "model.default")) == "\n"  # unset: an empty line
    assert ok(script("config", "set", "model.default", "my-model")).startswith("model.default = ")
    assert ok(script("config", "get", "model.default")) == "my-model\n"
    ok(script("config", "set", "compression.threshold", "0.6"))
    assert ok(script("config", "get", "compression.threshold")) == "0.6\n"
    assert ok(script("config", "get", "compression.enabled")) == "true\n"


@pytest.mark.parametrize("args,words", [
    (("frobnicate",), ("invalid choice", "frobnicate")),
    (("sessions", "frobnicate"), ("invalid choice",)),
    (("gateway", "frobnicate"), ("invalid choice",)),
    (("--no-such-flag",), ("unrecognized arguments",)),
    (("config", "get", "no.such.key"), ("no config key", "no.such.key")),
    (("config", "set", "compression.threshold", "seven"), ("compression.threshold",)),
    (("sessions", "show", "no-such-session"), ("no session matches", "no-such-session")),
    (("sessions", "list", "--limit", "0"), ("--limit",)),
    (("sessions", "list", "--limit", "many"), ("--limit", "many")),
    (("-z", "hi", "-r", "no-such-session"), ("no session matches",)),
    (("-z", "   "), ("empty",)),
])
def test_failures_are_one_line_on_stderr(script, args, words):
    res = script(*args)
    assert res.stdout == ""
    one_error_line(res, *words)
