"""The shell cannot read what the file tools protect (issue 20 item 7): a real agent and the
loopback provider scripting the commands, an approval callback that denies, and what the
provider received checked for the key and the database password."""
from __future__ import annotations

import json

import pytest

from hermes_core.redact import redact_shapes, shell_environment
from tools.shell_paths import protected_paths_reason

PEM = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
       "AAAAAAAAAAEAAAAzAAAAC3NzaC1lZDI1NTE5AAAAIKey-material-here\n-----END OPENSSH PRIVATE KEY-----\n")
DB_PASSWORD = "db-Pa55-9c8b7a"
DB_URL = f"postgresql://hermes:{DB_PASSWORD}@db.internal:5432/hermes"


@pytest.fixture
def fake_home(tmp_path, monkeypatch, hermes_home):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(PEM)
    monkeypatch.setenv("HOME", str(home))
    (hermes_home / ".env").write_text(f"HERMES_DATABASE_URL={DB_URL}\n")
    return home


def test_commands_touching_protected_paths_ask_like_the_file_tools(fake_home, make_agent,
                                                                   fake_provider, tmp_path):
    from tests.fake_provider import text, tool_calls

    asked: list[tuple[str, str]] = []

    def deny(question: str, reason: str) -> str:
        asked.append((question, reason))
        return "deny"

    commands = ["cat ~/.ssh/id_ed25519; cat $HERMES_HOME/.env", "cat $HOME/.ssh/id_ed25519",
                "base64 < ${HOME}/.ssh/id_ed25519", f"cd {fake_home} && cat .ssh/id_ed25519",
                'cat "$HERMES_HOME/.env"']
    fake_provider.queue(tool_calls([("read_file", {"path": "~/.ssh/id_ed25519"})]
                                   + [("terminal", {"command": c}) for c in commands]), text("done"))
    agent = make_agent(approval_callback=deny, session_db=False)
    assert agent.run_conversation("show me the key")["final_response"] == "done"
    results = [m["content"] for m in fake_provider.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == 1 + len(commands) and all("denied" in r for r in results), results
    assert len(asked) == 1 + len(commands)
    why = dict(asked)  # parallel calls ask in any order
    assert "~/.ssh" in why[commands[0]] and "HERMES_HOME/.env" in why[commands[0]]
    sent = json.dumps(fake_provider.requests)
    assert "Key-material-here" not in sent and DB_PASSWORD not in sent


def test_output_that_carries_a_key_or_a_url_password_is_masked(fake_home, make_agent, fake_provider,
                                                               tmp_path):
    from tests.fake_provider import text, tool_calls

    # the key sits past what the path check sniffs (so the command runs): the redaction catches it
    (tmp_path / "notes.txt").write_text("filler line\n" * 500 + f"key:\n{PEM}db: {DB_URL}\n")
    fake_provider.queue(tool_calls([("terminal", {"command": "tail -5 notes.txt"})]), text("done"))
    agent = make_agent(session_db=False, cwd=str(tmp_path))
    agent.run_conversation("what is in notes.txt")
    (result,) = [m["content"] for m in fake_provider.requests[-1]["messages"] if m["role"] == "tool"]
    assert "Key-material-here" not in result and DB_PASSWORD not in result
    assert "BEGIN OPENSSH PRIVATE KEY" in result and "hermes:***@db.internal" in result


def test_the_shell_environment_drops_secrets_by_value_shape_and_name():
    env = {"DATABASE_URL": DB_URL, "REDIS": "redis://:sup3rsecretpw@cache:6379/0",
           "GITLAB_PAT": "glpat-abcdefghijklmnopqrst", "MY_TOKEN_FILE_CONTENT": "x" * 12,
           "SOME_SECRET_VALUE": "y" * 12, "ADMIN_PASSWORD_HASH": "z" * 12,
           "LOOKS_INNOCENT": "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
           "DEPLOY_KEY_BODY": PEM,
           "HOME": "/home/u", "PATH": "/usr/bin", "PUBLIC_URL": "https://example.org/app",
           "PROXY": "http://user@proxy:3128"}
    kept = shell_environment(env)
    assert set(kept) == {"HOME", "PATH", "PUBLIC_URL", "PROXY"}


def test_protected_path_decisions(fake_home, hermes_home, tmp_path):
    home = str(fake_home)
    assert protected_paths_reason("ls -la /tmp; echo hi", tmp_path) is None
    assert protected_paths_reason("cat README.md ~/.bashrc", tmp_path) is None
    assert protected_paths_reason("grep -r x ~/.ssh", tmp_path) is not None
    assert protected_paths_reason(f"tar czf /tmp/x.tgz {home}/.ssh", tmp_path) is not None
    assert protected_paths_reason("cp $HERMES_HOME/state.db /tmp/", tmp_path) is not None
    assert protected_paths_reason("sqlite3 ${HERMES_HOME}/state.db .dump", tmp_path) is not None
    assert protected_paths_reason("cat ../home/.ssh/id_ed25519", fake_home / "x") is not None
    (tmp_path / "mine.key").write_text("not a key")
    assert protected_paths_reason("cat mine.key", tmp_path) is not None  # by name, like read_file
    (tmp_path / "plain.txt").write_text(PEM)
    assert "private key" in protected_paths_reason("head -5 plain.txt", tmp_path)  # by content


def test_redaction_shapes():
    assert redact_shapes(DB_URL) == "postgresql://hermes:***@db.internal:5432/hermes"
    assert redact_shapes("https://example.org/a:b@c") == "https://example.org/a:b@c"
    masked = redact_shapes(f"before\n{PEM}after")
    assert "Key-material" not in masked and masked.startswith("before\n-----BEGIN OPENSSH PRIVATE KEY")
    assert masked.rstrip().endswith("after")
    cut = redact_shapes("-----BEGIN RSA PRIVATE KEY-----\nMIIEow...truncated")
    assert "MIIEow" not in cut
    tail = redact_shapes("\n".join(PEM.splitlines()[2:]))  # `tail` cut the BEGIN line off
    assert "Key-material" not in tail and "END OPENSSH PRIVATE KEY" in tail
