"""The embedded model's echoes of its own tool calls never reach the user as its answer (issue 15
item 10): "What files are here?" came back as "[called tool terminal with arguments {...}]"."""
from __future__ import annotations

import pytest

from agent.providers.local import prepare_messages
from agent.providers.tool_echo import EchoFilter, render_call, strip_echoes

ECHO = '[called tool terminal with arguments {"command": "echo -n \'Hello, World!\'", "output": "Hello"}]'


def _streamed(text: str, size: int) -> str:
    f = EchoFilter()
    return "".join(f.feed(text[i:i + size]) for i in range(0, len(text), size)) + f.flush()


@pytest.mark.parametrize("answer, shown", [
    (ECHO, ""),
    ('[called todo with arguments { "todos": [] }]', ""),  # the model shortens our marker, too
    (f"{ECHO}\n\nThe command printed Hello.", "The command printed Hello."),
    ("Done.\nTool result (terminal): {\"exit_code\": 0}\nBye.", "Done.\nBye."),
    ("  [called tool x with arguments {}]\nok", "ok"),
    ("A [called tool x] in the middle of a line stays.", "A [called tool x] in the middle of a line stays."),
    ("[called", "[called"),  # cut off before it could be the marker: shown as written
    ("Tool time!\n- a\n- b", "Tool time!\n- a\n- b"),
    ("\n\n", ""),
])
def test_marker_lines_are_dropped_whole_and_streams_agree(answer, shown):
    assert strip_echoes(answer) == shown
    for size in (1, 3, 7, 1000):
        assert _streamed(answer, size).rstrip() == shown


def test_the_prompt_renders_calls_with_the_marker_the_filter_knows():
    history = [{"role": "user", "content": "hi"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c1", "type": "function", "function": {"name": "todo", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "[]"}]
    rendered = prepare_messages(history, native_tool_calls=False)
    assert rendered[1]["content"] == render_call("todo", "{}")
    assert strip_echoes(rendered[1]["content"]) == "" and strip_echoes(rendered[2]["content"]) == ""
