"""/tools and /usage in the chat: toolsets with their tools, the fixed prompt's breakdown."""
from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from hermes_core.config import load_config
from hermes_cli.agent_factory import build_agent
from hermes_cli.chat import ChatSession
from hermes_cli.render import Renderer
from tests.conftest import write_config


@pytest.fixture
def make_chat(fake_provider):
    def make(toolsets=None):
        out = io.StringIO()
        r = Renderer(out=out, spinner=False)
        args = SimpleNamespace(model=None, provider=None, base_url=fake_provider.base_url, api_key="test",
                               toolsets=toolsets, resume=None, continue_last=False, max_turns=None,
                               yolo=False, debug=False)
        chat = ChatSession(lambda sid: build_agent(args, load_config(), session_id=sid), r)
        chat.out = out
        return chat
    return make


def test_tools_lists_toolsets_with_their_tools(make_chat):
    chat = make_chat("terminal,file")
    chat.handle_line("/tools")
    lines = chat.out.getvalue().splitlines()
    terminal = next(line.split() for line in lines if line.split()[0] == "terminal")
    assert sorted(w.strip(",") for w in terminal[1:]) == ["process", "terminal"]
    assert any(line.split()[:2] == ["file", "read_file,"] for line in lines)
    off = next(line for line in lines if line.split()[0] == "memory")
    assert "(off)" in off and "memory" in off.split(")")[-1]
    assert "hermes -t" in chat.out.getvalue()


def test_tools_says_what_a_small_window_left_out(make_chat, hermes_home):
    write_config(hermes_home, "model:\n  context_length: 4096\n")
    chat = make_chat()
    chat.handle_line("/tools")
    todo = next(line for line in chat.out.getvalue().splitlines() if line.split()[0] == "todo")
    assert "left out to fit the context window" in todo


def test_usage_shows_the_fixed_prompt_by_part(make_chat, hermes_home, fake_provider):
    (hermes_home / "SOUL.md").write_text("You are a pirate. " * 40)
    chat = make_chat()
    chat.handle_line("hello")
    chat.handle_line("/usage")
    out = chat.out.getvalue()
    assert "Fixed prompt sent with every request" in out
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()
            if line.strip() and line.split()[0] in ("identity", "tools:terminal", "total")}
    assert int(rows["identity"]) >= 170 and int(rows["tools:terminal"]) > 100
    assert "Compactions: 0" in out.splitlines()[-1]
