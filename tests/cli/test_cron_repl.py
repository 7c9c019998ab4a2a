"""/cron in the REPL: ChatSession without a terminal, the real store, runs answered by the loopback provider."""
from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from hermes_core.config import load_config
from hermes_cli import slash
from hermes_cli.agent_factory import build_agent
from hermes_cli.chat import ChatSession
from hermes_cli.render import Renderer
from hermes_state import SessionDB
from tests.fake_provider import text


@pytest.fixture
def chat(fake_provider, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", fake_provider.base_url)  # what the job's own agent reads
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    out = io.StringIO()
    db = SessionDB()
    args = SimpleNamespace(model=None, provider=None, base_url=None, api_key=None, toolsets=None,
                           resume=None, continue_last=False, max_turns=None, yolo=False, debug=False)
    c = ChatSession(lambda sid: build_agent(args, load_config(), session_db=db, session_id=sid),
                    Renderer(out=out, spinner=False), db=db)
    c.out = out  # type: ignore[attr-defined]
    yield c
    db.close()


def said(chat) -> str:
    text_ = chat.out.getvalue()
    chat.out.seek(0)
    chat.out.truncate()
    return text_


def test_cron_is_a_listed_command():
    assert slash.lookup("cron").name == "cron" and "/cron" in "\n".join(slash.help_lines())


def test_add_list_run_pause_remove(chat, fake_provider):
    chat.handle_line("/cron add every 1d summarise the news")
    out = said(chat)
    assert "Created job" in out and "delivers to local" in out  # no chat here: local by default
    job = chat.db.list_cron_jobs()[0]
    chat.handle_line("/cron")
    assert job["id"] in said(chat)

    fake_provider.queue(text("Nothing happened today."))
    chat.handle_line(f"/cron run {job['id']}")
    out = said(chat)
    assert "Nothing happened today." in out and "ok; output" in out
    chat.handle_line("/cron runs")
    assert "manual" in said(chat)

    chat.handle_line("/cron pause summarise the news")
    assert "Paused" in said(chat)
    chat.handle_line("/cron add 30m ping")
    assert "ambiguous" in said(chat)
    chat.handle_line("/cron remove nope")
    assert "no job with id or name 'nope'" in said(chat)
    chat.handle_line(f"/cron remove {job['id']}")
    assert "Removed" in said(chat) and chat.db.list_cron_jobs() == []
    chat.handle_line("/cron frobnicate")
    assert "Usage: /cron" in said(chat)
