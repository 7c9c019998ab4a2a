"""File tools and secrets (issue 15 item 4): HERMES_HOME secrets, ~/.ssh and private keys need the
user's approval to be read or written; a confined session (the gateway) cannot leave its directory."""
from __future__ import annotations

import os
import re

import pytest

from tools.path_policy import is_private_key, secret_reason
from tools.registry import ToolContext, ToolError, dispatch

SECRET = "sk-live-0123456789abcdef"
PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"


@pytest.fixture
def fake_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(PEM)
    (home / ".ssh" / "config").write_text("Host *\n")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def secrets(hermes_home):
    (hermes_home / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n")
    (hermes_home / "state.db").write_bytes(b"SQLite format 3\x00")
    (hermes_home / "pairing").mkdir()
    (hermes_home / "pairing" / "telegram-approved.json").write_text('{"42": {}}')
    return hermes_home


def asker(answer: str, asked: list):
    return lambda question, reason: asked.append((question, reason)) or answer


def test_hermes_home_secrets_are_refused_without_an_approver(tmp_path, secrets):
    ctx = ToolContext(cwd=tmp_path)
    for name in (".env", "state.db", "state.db-wal", "pairing/telegram-approved.json"):
        (secrets / name).touch(exist_ok=True)
        with pytest.raises(ToolError, match="denied") as exc:
            dispatch("read_file", {"path": str(secrets / name)}, ctx)
        assert SECRET not in str(exc.value)
        with pytest.raises(ToolError, match="denied"):
            dispatch("write_file", {"path": str(secrets / name), "content": "x"}, ctx)
    assert SECRET in (secrets / ".env").read_text()  # nothing was overwritten
    assert (secrets / "pairing" / "telegram-approved.json").read_text() == '{"42": {}}'


def test_the_cli_user_can_approve_reading_a_secret(tmp_path, secrets):
    asked: list = []
    ctx = ToolContext(cwd=tmp_path, approval_callback=asker("once", asked))
    assert SECRET in dispatch("read_file", {"path": str(secrets / ".env")}, ctx)
    (question, reason), = asked
    assert question == f"read_file {secrets / '.env'}" and "API keys" in reason
    ctx.approval_callback = asker("deny", asked)
    with pytest.raises(ToolError, match="denied"):
        dispatch("read_file", {"path": str(secrets / ".env")}, ctx)


def test_ssh_and_key_files_by_name_and_by_content(tmp_path, fake_home):
    ctx = ToolContext(cwd=tmp_path)
    for path in (fake_home / ".ssh" / "config", fake_home / ".ssh" / "id_ed25519"):
        with pytest.raises(ToolError, match="denied.*ssh"):
            dispatch("read_file", {"path": str(path)}, ctx)
    (tmp_path / "deploy.key").write_text("anything")
    with pytest.raises(ToolError, match="private key"):
        dispatch("read_file", {"path": "deploy.key"}, ctx)
    (tmp_path / "notes.txt").write_text("my backup:\n" + PEM)  # a key by its header, whatever the name
    with pytest.raises(ToolError, match="private key"):
        dispatch("read_file", {"path": "notes.txt"}, ctx)
    with pytest.raises(ToolError, match="private key"):
        dispatch("patch", {"path": "notes.txt", "old_string": "my backup", "new_string": "x"}, ctx)
    with pytest.raises(ToolError, match="content is a private key"):
        dispatch("write_file", {"path": "stolen.txt", "content": PEM}, ctx)
    assert not (tmp_path / "stolen.txt").exists()
    (tmp_path / "cert.pem").write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    assert "BEGIN CERTIFICATE" in dispatch("read_file", {"path": "cert.pem"}, ctx)  # public: fine


def test_a_symlink_does_not_launder_a_secret(tmp_path, secrets):
    os.symlink(secrets / ".env", tmp_path / "harmless.txt")
    with pytest.raises(ToolError, match="denied"):
        dispatch("read_file", {"path": "harmless.txt"}, ToolContext(cwd=tmp_path))


def test_search_skips_secret_files_and_says_so(hermes_home, secrets):
    (hermes_home / "notes.md").write_text("the key starts with sk-live\n")
    out = dispatch("search_files", {"pattern": "sk-live", "path": str(hermes_home)}, ToolContext(cwd=hermes_home))
    assert "notes.md:1" in out and SECRET not in out and ".env" not in out.split("(skipped")[0]
    assert re.search(r"skipped \d+ file\(s\) holding secrets", out)


def test_confined_session_cannot_leave_its_directory(tmp_path, secrets):
    work = tmp_path / "workspace"
    work.mkdir()
    (work / "ok.txt").write_text("inside\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    os.symlink(tmp_path / "outside.txt", work / "link.txt")
    ctx = ToolContext(cwd=work, confine_to=work)
    assert "inside" in dispatch("read_file", {"path": "ok.txt"}, ctx)
    for path in ("../outside.txt", str(tmp_path / "outside.txt"), "link.txt", str(secrets / ".env")):
        with pytest.raises(ToolError, match="outside the working directory"):
            dispatch("read_file", {"path": path}, ctx)
    with pytest.raises(ToolError, match="outside the working directory"):
        dispatch("write_file", {"path": "../escape.txt", "content": "x"}, ctx)
    with pytest.raises(ToolError, match="outside the working directory"):
        dispatch("search_files", {"pattern": "x", "path": ".."}, ctx)
    assert not (tmp_path / "escape.txt").exists()
    # the CLI (no confinement) keeps today's behaviour: allowed, with a note
    out = dispatch("read_file", {"path": "../outside.txt"}, ToolContext(cwd=work))
    assert "outside" in out and "note:" in out


def test_policy_decisions(tmp_path):
    home, hh = tmp_path / "home", tmp_path / "hh"
    assert secret_reason(hh / ".env", home, hh) and secret_reason(hh / "state.db-shm", home, hh)
    assert secret_reason(hh / "pairing" / "x.json", home, hh) and secret_reason(home / ".ssh", home, hh)
    assert secret_reason(tmp_path / "id_rsa", home, hh) and secret_reason(tmp_path / "a.P12", home, hh)
    assert secret_reason(hh / "config.yaml", home, hh) is None
    assert secret_reason(tmp_path / "id_rsa.pub", home, hh) is None
    assert secret_reason(tmp_path / "sub" / ".env", home, hh) is None  # only Hermes' own .env
    assert is_private_key(b"-----BEGIN RSA PRIVATE KEY-----\n") and is_private_key(PEM.encode())
    assert is_private_key(b"-----BEGIN PGP PRIVATE KEY BLOCK-----")
    assert not is_private_key(b"-----BEGIN PUBLIC KEY-----")
