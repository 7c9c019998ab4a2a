"""The terminal details a new user notices (issue 21, item 9): /help fits the terminal, a slash
word that names no skill is said to be one, `sessions list` shows what the user typed, and Tab
completes even when it arrives in the same burst as the text. (/compress saying why nothing
changed: tests/cli/test_resume.py.)"""
from __future__ import annotations

import json

from tests.cli.test_repl import PROMPT, Repl
from tests.fake_provider import text


def test_help_wraps_at_word_boundaries_to_the_terminal_width(fake_provider):
    repl = Repl(fake_provider, dimensions=(50, 80), COLUMNS="")  # the width comes from the pty
    try:
        out = repl.say("/help", until=r"Ctrl\+C interrupts")
        lines = [ln.rstrip() for ln in out.splitlines()]
        start = next(i for i, ln in enumerate(lines) if ln.startswith("Commands:"))
        shown = [ln for ln in lines[start:] if ln and PROMPT not in ln]
        assert max(len(ln) for ln in shown) <= 80, max(shown, key=len)
        new = next(i for i, ln in enumerate(shown) if ln.lstrip().startswith("/new "))
        column = shown[new].index("start a fresh session")
        assert shown[new + 1].startswith(" " * column) and shown[new + 1][column] != " "
        entry = " ".join(ln.strip() for ln in shown[new:new + 2])  # wrapped between words only
        assert entry.endswith("a fresh session (the old one stays in the store) (also /reset)")
    finally:
        repl.child.terminate(force=True)


def test_tab_in_the_same_burst_as_the_text_completes(fake_provider):
    repl = Repl(fake_provider)
    try:
        repl.child.send("/hist\t\r")  # one write: the text, Tab and Enter together
        repl.wait("No messages yet in this session")
        repl.wait(PROMPT)
        repl.child.send("/debu\t the parser crashes\r")  # a skill completes the same way
        fake_provider.queue(text("Found it."))
        repl.wait("Using skill debugging")
        repl.wait("Found it")
        assert fake_provider.requests[-1]["messages"][-1]["content"].endswith("the parser crashes")
        out = repl.say("/debuging", until="Did you mean")  # unknown: the close skill is named
        assert "/debugging" in out
    finally:
        repl.child.terminate(force=True)


def test_z_with_a_slash_word_that_names_no_skill_says_so(hermes, fake_provider):
    res = hermes("-z", "/nosuchskill hi")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.startswith("hermes: error: no skill nosuchskill") and "//" in res.stderr
    res = hermes("-z", "/debuging why does it crash?")
    assert res.returncode == 2 and "close: debugging" in res.stderr
    assert fake_provider.requests == []
    fake_provider.queue(text("Yes, /etc/hosts maps names."))
    assert hermes("-z", "/etc/hosts maps names?").returncode == 0  # a path is not a skill word
    fake_provider.queue(text("sent as typed"))
    assert hermes("-z", "//nosuchskill is a word").stdout == "sent as typed\n"
    assert fake_provider.requests[-1]["messages"][-1]["content"] == "/nosuchskill is a word"


def test_sessions_list_shows_what_the_user_typed(hermes, fake_provider):
    fake_provider.queue(text("Start by reproducing it."))
    assert hermes("-z", "/debugging the parser crashes on empty input").returncode == 0
    assert "# Debugging routine" in fake_provider.requests[0]["messages"][-1]["content"]
    listing = hermes("sessions", "list").stdout
    assert "/debugging the parser crashes on empty input" in listing, listing
    assert "invoked the skill" not in listing
    row = json.loads(hermes("sessions", "list", "--json").stdout)[0]
    assert row["preview"] == "/debugging the parser crashes on empty input"
