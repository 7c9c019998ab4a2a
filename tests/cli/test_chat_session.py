"""ChatSession without a terminal: the real AIAgent against the loopback provider, output captured."""
from __future__ import annotations

import io
import threading
from types import SimpleNamespace

import pytest

from agent.callbacks import AgentHooks
from hermes_core.config import load_config
from hermes_cli.agent_factory import build_agent
from hermes_cli.approval_prompt import parse_approval, read_line
from hermes_cli.chat import ChatSession
from hermes_cli.render import Renderer, tool_line
from tests.fake_provider import slow, text, tool_calls


def _args(fp, **kw):
    base = dict(model=None, provider=None, base_url=fp.base_url, api_key="test", toolsets=None, resume=None,
                continue_last=False, max_turns=None, yolo=False, debug=False)
    base.update(kw)
    return SimpleNamespace(**base)


@pytest.fixture
def chat(fake_provider):
    from hermes_state import SessionDB

    out = io.StringIO()
    r = Renderer(out=out, spinner=False)
    db = SessionDB()
    answers: list[str] = []
    holder: dict = {}

    def factory(sid):
        hooks = AgentHooks(tool_progress=r.on_tool, status=r.on_status,
                           approval=lambda c, why: holder["c"].approval_callback(c, why))
        return build_agent(_args(fake_provider), load_config(), session_db=db, session_id=sid,
                           hooks=hooks)

    c = ChatSession(factory, r, db=db, ask_approval=lambda cmd, why: answers.pop(0) if answers else "deny")
    holder["c"] = c
    c.out, c.answers = out, answers  # type: ignore[attr-defined]
    yield c
    db.close()


def test_turns_history_undo_retry(chat, fake_provider):
    fake_provider.queue(text("one"), text("two"))
    chat.handle_line("first question")
    chat.handle_line("second question")
    assert "one\n" in chat.out.getvalue() and "two\n" in chat.out.getvalue()
    chat.cmd_history("")
    assert "you: second question" in chat.out.getvalue()

    chat.handle_line("/undo")
    assert "Removed your last message" in chat.out.getvalue()
    assert [m["content"] for m in chat.agent.messages if m["role"] == "user"] == ["first question"]
    stored = chat.db.get_active_messages(chat.agent.session_id)
    assert [m["content"] for m in stored if m["role"] == "user"] == ["first question"]

    fake_provider.queue(text("one again"))
    chat.handle_line("/retry")
    assert fake_provider.requests[-1]["messages"][-1]["content"] == "first question"
    assert sum(1 for m in fake_provider.requests[-1]["messages"] if m["role"] == "user") == 1
    assert "one again" in chat.out.getvalue()


def test_title_sessions_resume_new_model(chat, fake_provider):
    chat.handle_line("/title")
    assert "no title" in chat.out.getvalue()
    chat.handle_line("remember pineapple")
    first = chat.agent.session_id
    chat.handle_line("/title fruit talk")
    assert chat.db.get_session(first)["title"] == "fruit talk"

    chat.handle_line("/reset")
    assert chat.agent.session_id != first
    chat.handle_line("/sessions")
    assert "fruit talk" in chat.out.getvalue()

    chat.handle_line("/resume fruit talk")
    assert chat.agent.session_id == first
    fake_provider.queue(text("pineapple"))
    chat.handle_line("what fruit?")
    assert "remember pineapple" in [m.get("content") for m in fake_provider.requests[-1]["messages"]]

    chat.handle_line("/resume nothing-like-this")
    assert "No session matches" in chat.out.getvalue()
    chat.handle_line("/model other-model")
    chat.handle_line("next")
    assert fake_provider.requests[-1]["model"] == "other-model"


def test_tools_and_yolo(chat, fake_provider, tmp_path):
    chat.handle_line("/tools")
    assert "terminal" in chat.out.getvalue()

    victim = tmp_path / "victim"
    victim.mkdir()
    fake_provider.queue(tool_calls([("terminal", {"command": f"rm -rf {victim}"})]), text("kept"))
    chat.handle_line("delete it")  # the scripted prompt answers deny
    assert victim.is_dir()
    assert "✗ terminal" in chat.out.getvalue()

    chat.handle_line("/yolo")
    assert chat.yolo and "YOLO on" in chat.out.getvalue()
    fake_provider.queue(tool_calls([("terminal", {"command": f"rm -rf {victim}"})]), text("gone"))
    chat.handle_line("delete it now")
    assert not victim.exists()


def test_approval_once_is_asked_from_the_main_thread(chat, fake_provider, tmp_path):
    victim = tmp_path / "v2"
    victim.mkdir()
    asked = []

    def ask(cmd, why):
        asked.append((cmd, why, threading.current_thread() is threading.main_thread()))
        return "once"

    chat._ask = ask
    fake_provider.queue(tool_calls([("terminal", {"command": f"rm -rf {victim}"})]), text("done"))
    chat.handle_line("remove v2")
    assert asked and asked[0][2] is True and str(victim) in asked[0][0]
    assert not victim.exists()


def test_interrupt_from_the_worker_api(chat, fake_provider):
    fake_provider.queue(slow(text("late"), 20))
    timer = threading.Timer(0.5, chat._interrupt)
    timer.start()
    res = chat.send("slow one")
    assert res.get("interrupted")
    assert "Interrupted" in chat.out.getvalue()


def test_status_warnings_are_printed():
    out = io.StringIO()
    r = Renderer(out=out, spinner=False)
    r.on_status("warning", "summary failed; retrying compression in 60 s")
    r.on_status("compression", "compressed 40 -> 12 messages")
    assert "⚠ summary failed; retrying compression in 60 s" in out.getvalue()
    assert "compressed 40 -> 12 messages" in out.getvalue()


def test_small_pieces(tmp_path):
    assert parse_approval("o") == "once" and parse_approval("Always") == "always"
    assert parse_approval("d") == "deny" and parse_approval("maybe") is None
    assert tool_line({"name": "terminal", "args": {"command": "ls"}, "ok": True, "duration": 0.25,
                      "summary": "3 files"}) == "✓ terminal  ls  (0.2s)  — 3 files"
    import os

    rfd, wfd = os.pipe()
    assert read_line(0.2, rfd) is None  # nothing typed: times out
    os.write(wfd, b"always\n")
    assert read_line(1, rfd) == "always"
    os.close(rfd)
    os.close(wfd)
