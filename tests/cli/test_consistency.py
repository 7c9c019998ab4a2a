"""The command line behaves the same everywhere (issue 21, item 10): --json on listing and show
commands, --yes on destructive ones, usage errors exit 2, messages name CLI commands, and an
export's format follows its file name. A busy gateway port is in
tests/gateway/test_platform_startup.py."""
from __future__ import annotations

import json

from hermes_cli.pairing_cmd import pairing_rows
from tests.fake_provider import text


def _one_session(hermes, fake_provider) -> str:
    fake_provider.queue(text("The octopus has three hearts."))
    assert hermes("-z", "tell me about the octopus").returncode == 0
    return json.loads(hermes("sessions", "list", "--json").stdout)[0]["id"]


def test_json_on_sessions_search_and_show_and_pairing_list(hermes, fake_provider):
    sid = _one_session(hermes, fake_provider)
    hits = json.loads(hermes("sessions", "search", "octopus", "--json").stdout)
    assert isinstance(hits, list) and {h["session_id"] for h in hits} == {sid}
    assert {"role", "snippet", "message_id"} <= set(hits[0])
    shown = json.loads(hermes("sessions", "show", sid, "--json").stdout)
    assert shown["session"]["id"] == sid
    assert [m["content"] for m in shown["messages"]] == ["tell me about the octopus",
                                                         "The octopus has three hearts."]
    assert json.loads(hermes("sessions", "show", sid, "--children", "--json").stdout) == []
    res = hermes("pairing", "list", "--json")
    assert res.returncode == 0 and json.loads(res.stdout) == []
    rows = pairing_rows({"telegram": {"pending": {"AB12CD": {"user_id": 7, "created_at": 0.0}},
                                      "approved": {"9": {"user_name": "ann"}}}}, now=60.0)
    assert [(r["state"], r["user_id"]) for r in rows] == [("pending", "7"), ("approved", "9")]


def test_destructive_commands_take_yes(hermes, hermes_home, tmp_path):
    skill = tmp_path / "pdf-tools"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: pdf-tools\ndescription: Read PDF files.\n---\n"
                                    "Use pdftotext.\n")
    assert hermes("skills", "install", str(skill)).returncode == 0
    res = hermes("skills", "remove", "pdf-tools")  # no terminal to ask on, no --yes
    assert res.returncode == 1 and "pass --yes" in res.stderr
    assert "pdf-tools" in hermes("skills", "list").stdout
    assert hermes("skills", "remove", "pdf-tools", "--yes").returncode == 0
    assert "pdf-tools" not in hermes("skills", "list").stdout

    assert hermes("cron", "create", "every 1h", "check the disk", "--name", "disk").returncode == 0
    res = hermes("cron", "remove", "disk")
    assert res.returncode == 1 and "pass --yes" in res.stderr
    assert hermes("cron", "remove", "disk", "--yes").returncode == 0
    assert json.loads(hermes("cron", "list", "--json").stdout) == []


def test_usage_errors_exit_2(hermes):
    for args, words in ((("cron", "create"), "no schedule"),
                        (("sessions", "search", ""), "the search query is empty"),
                        (("sessions", "search", "   "), "the search query is empty"),
                        (("sessions", "prune", "--older-than", "-1"), "--older-than"),
                        (("cron", "create", "every 1h"), "no prompt after the schedule")):
        res = hermes(*args)
        assert res.returncode == 2, (args, res.stderr)
        assert res.stderr.startswith("hermes: error:") and words in res.stderr, res.stderr


def test_messages_name_what_to_do_at_the_command_line(hermes, tmp_path):
    res = hermes("skills", "install", str(tmp_path / "no-such-folder"))
    assert res.returncode == 1 and "no-such-folder does not exist" in res.stderr
    res = hermes("skills", "show", "zzz-nothing-like-it")
    assert res.returncode == 1 and "`hermes skills list`" in res.stderr
    assert "skills_list" not in res.stderr and "skill_view" not in res.stderr


def test_export_format_follows_the_file_name(hermes, fake_provider, tmp_path):
    sid = _one_session(hermes, fake_provider)
    as_json = tmp_path / "octopus.json"
    assert hermes("sessions", "export", sid, "-o", str(as_json)).returncode == 0
    data = json.loads(as_json.read_text())
    assert data["session"]["id"] == sid and len(data["messages"]) == 2
    as_lines = tmp_path / "octopus.jsonl"
    assert hermes("sessions", "export", sid, "-o", str(as_lines)).returncode == 0
    roles = [json.loads(x)["role"] for x in as_lines.read_text().splitlines()]
    assert roles == ["user", "assistant"]
    as_md = tmp_path / "octopus.md"
    assert hermes("sessions", "export", sid, "-o", str(as_md)).returncode == 0
    assert as_md.read_text().startswith("# ")
    res = hermes("sessions", "export", sid, "--format", "json")
    assert json.loads(res.stdout)["session"]["id"] == sid
