"""The slash-command table: parsing, lookup, suggestions, completion (pure)."""
from __future__ import annotations

from hermes_cli import slash


def test_parse():
    assert slash.parse("hello") is None
    p = slash.parse("/model  gpt-4o ")
    assert (p.name, p.arg) == ("model", "gpt-4o")
    assert slash.parse("/COMPRESS the database work").arg == "the database work"
    assert slash.parse("//etc/hosts is a file") is None
    assert slash.unescape("//etc/hosts is a file") == "/etc/hosts is a file"
    assert slash.parse("/").name == ""


def test_lookup_and_aliases():
    assert slash.lookup("reset").name == "new"
    assert slash.lookup("/exit").name == "quit"
    assert slash.lookup("nope") is None
    names = {c.name for c in slash.COMMANDS}
    assert {"help", "new", "model", "compress", "usage", "history", "undo", "retry", "title", "sessions",
            "resume", "tools", "yolo", "quit"} <= names


def test_suggestions():
    assert slash.suggest("usag")[0] == "usage"
    assert "compress" in slash.suggest("compres")
    assert "resume" in slash.suggest("resum")
    assert slash.suggest("xyzzy") == []
    assert "Did you mean /history" in slash.unknown_message("histroy")
    assert "Did you mean" not in slash.unknown_message("xyzzy")


def test_completions():
    assert [c for c, _ in slash.completions("/re")] == ["/retry", "/resume"]
    assert slash.completions("/model x") == []
    assert slash.completions("hello") == []
    assert len(slash.completions("/")) == len(slash.COMMANDS)


def test_help_lists_every_command():
    text = "\n".join(slash.help_lines())
    for c in slash.COMMANDS:
        assert f"/{c.name}" in text
