"""`hermes sessions ...` round-trips through a real state.db filled by real one-shot runs."""
from __future__ import annotations

import json
import sqlite3
import sys
import time

import pexpect

from tests.cli.conftest import ROOT, hermes_env, strip_ansi
from tests.fake_provider import text


def _make_sessions(hermes, fp) -> list[str]:
    fp.queue(text("Octopuses have three hearts."), text("Kiwis cannot fly."))
    assert hermes("-z", "tell me about octopus anatomy").returncode == 0
    assert hermes("-z", "tell me about kiwi birds").returncode == 0
    res = hermes("sessions", "list")
    assert res.returncode == 0, res.stderr
    ids = [line.split()[0] for line in res.stdout.splitlines()[1:]]
    assert len(ids) == 2
    return ids  # newest first


def test_list_show_search_export_rename_delete(hermes, fake_provider, tmp_path):
    kiwi, octo = _make_sessions(hermes, fake_provider)
    listing = hermes("sessions", "list").stdout
    assert "tell me about kiwi birds" in listing and "cli" in listing

    show = hermes("sessions", "show", octo)
    assert show.returncode == 0
    assert "user: tell me about octopus anatomy" in show.stdout
    assert "assistant: Octopuses have three hearts." in show.stdout

    hits = hermes("sessions", "search", "hearts")
    assert hits.returncode == 0 and octo in hits.stdout and kiwi not in hits.stdout
    assert "No messages match" in hermes("sessions", "search", "zebra").stdout

    md = hermes("sessions", "export", octo)
    assert md.returncode == 0
    assert md.stdout.startswith("# ") and "## user" in md.stdout and "Octopuses have three hearts." in md.stdout

    out = tmp_path / "octo.jsonl"
    res = hermes("sessions", "export", octo, "--format", "jsonl", "-o", str(out))
    assert res.returncode == 0 and res.stdout == ""
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["role"] for r in rows] == ["user", "assistant"]
    assert rows[0]["content"] == "tell me about octopus anatomy" and rows[0]["session_id"] == octo

    assert hermes("sessions", "rename", octo, "cephalopods").returncode == 0
    assert "cephalopods" in hermes("sessions", "list").stdout
    by_title = hermes("sessions", "show", "cephalopods")
    assert by_title.returncode == 0 and octo in by_title.stdout
    dup = hermes("sessions", "rename", kiwi, "cephalopods")
    assert dup.returncode == 1 and dup.stderr.startswith("hermes: error:") and "already used" in dup.stderr

    refused = hermes("sessions", "delete", octo)  # no terminal to confirm and no --yes
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert hermes("sessions", "delete", "cephalopods", "--yes").returncode == 0
    listing = hermes("sessions", "list").stdout
    assert octo not in listing and kiwi in listing
    missing = hermes("sessions", "show", octo)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1


def test_resume_by_title_and_prune(hermes, fake_provider):
    kiwi, octo = _make_sessions(hermes, fake_provider)
    assert hermes("sessions", "rename", kiwi, "birds").returncode == 0
    fake_provider.queue(text("Still kiwis."))
    assert hermes("-z", "and their eggs?", "-r", "birds").returncode == 0
    assert "tell me about kiwi birds" in [m.get("content") for m in fake_provider.requests[-1]["messages"]]

    res = hermes("sessions", "prune", "--older-than", "1")
    assert res.returncode == 0 and "Nothing to prune" in res.stdout
    # issue 15 item 7: sessions active in the last hour are never pruned without --force
    res = hermes("sessions", "prune", "--older-than", "0")
    assert res.returncode == 0 and "Nothing to prune" in res.stdout and "--force" in res.stdout
    # ... and without a terminal to ask on, --yes is required: one line, nothing removed
    res = hermes("sessions", "prune", "--older-than", "0", "--force")
    assert res.returncode == 1 and res.stderr.count("\n") == 1 and "--yes" in res.stderr
    assert kiwi in hermes("sessions", "list").stdout
    res = hermes("sessions", "prune", "--older-than", "0", "--force", "--yes")
    assert res.returncode == 0 and "pruned 2 sessions" in res.stdout
    assert "No sessions yet" in hermes("sessions", "list").stdout


def _age(session_id: str, days: float) -> None:
    """Make a session look idle for `days` (the store keeps activity times in sessions.updated_at)."""
    from hermes_core.config import hermes_home

    past = time.time() - days * 86400
    with sqlite3.connect(hermes_home() / "state.db") as conn:
        conn.execute("UPDATE sessions SET started_at = ?, updated_at = ? WHERE id = ?", (past, past, session_id))


def _spawn(fp, *args: str) -> pexpect.spawn:
    return pexpect.spawn(sys.executable, ["-m", "hermes_cli.main", *args], env=hermes_env(fp), cwd=str(ROOT),
                         encoding="utf-8", timeout=30, dimensions=(40, 160))


def test_delete_on_a_terminal_shows_the_session_and_asks(hermes, fake_provider):
    kiwi, octo = _make_sessions(hermes, fake_provider)
    assert hermes("sessions", "rename", octo, "cephalopods").returncode == 0
    child = _spawn(fake_provider, "sessions", "delete", octo)
    child.expect(r"\[y/N\]")
    shown = strip_ansi(child.before)
    assert octo in shown and "cephalopods" in shown and kiwi not in shown
    child.sendline("n")
    child.expect(pexpect.EOF)
    assert "Nothing deleted" in child.before
    child.close()
    assert octo in hermes("sessions", "list").stdout

    child = _spawn(fake_provider, "sessions", "delete", octo)
    child.expect(r"\[y/N\]")
    child.sendline("y")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    listing = hermes("sessions", "list").stdout
    assert octo not in listing and kiwi in listing


def test_prune_lists_what_it_removes_asks_and_spares_recent_sessions(hermes, fake_provider):
    kiwi, octo = _make_sessions(hermes, fake_provider)
    _age(octo, 10)  # idle for 10 days; kiwi was used a moment ago
    child = _spawn(fake_provider, "sessions", "prune", "--older-than", "0")
    child.expect(r"\[y/N\]")
    shown = strip_ansi(child.before)
    assert "1 session" in shown and octo in shown and kiwi not in shown
    child.sendline("y")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and "pruned 1 session" in child.before
    listing = hermes("sessions", "list").stdout
    assert octo not in listing and kiwi in listing

    child = _spawn(fake_provider, "sessions", "prune", "--older-than", "0", "--force")
    child.expect(r"\[y/N\]")
    assert kiwi in strip_ansi(child.before)
    child.sendline("")  # the default is no
    child.expect(pexpect.EOF)
    child.close()
    assert "Nothing deleted" in child.before and kiwi in hermes("sessions", "list").stdout
