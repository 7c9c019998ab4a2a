"""One session, two providers (issue 25): a conversation started on an OpenAI-compatible endpoint
continues on Anthropic's Messages API and back, through the real `hermes` command. The store keeps
one transcript shape, so each provider is sent the whole conversation, tool calls included."""
from __future__ import annotations

from hermes_state import SessionDB
from tests.cli.conftest import hermes_env, run_hermes
from tests.fake_anthropic import text as claude_text
from tests.fake_provider import check_well_formed, text, tool_calls

TODO = {"todos": [{"id": "1", "content": "remember ZEBRA", "status": "pending"}]}


def test_a_session_moves_from_openai_to_anthropic_and_back(fake_provider, fake_anthropic):
    env = hermes_env(fake_provider, HERMES_MODEL="fake-model")
    fake_provider.queue(tool_calls([("todo", TODO)]), text("Noted: ZEBRA."))
    first = run_hermes("-z", "the code word is ZEBRA", env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "Noted: ZEBRA."

    claude_env = {**env, "ANTHROPIC_BASE_URL": fake_anthropic.base_url,
                  "ANTHROPIC_API_KEY": "sk-ant-test"}
    fake_anthropic.queue(claude_text("It was ZEBRA."))
    second = run_hermes("--provider", "anthropic", "-m", "claude-fake-1", "-c", "-z",
                        "what was the code word?", env=claude_env)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "It was ZEBRA."
    body = fake_anthropic.requests[-1]
    turns = body["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant", "user"]
    assert turns[0]["content"][0]["text"] == "the code word is ZEBRA"
    use = next(b for b in turns[1]["content"] if b["type"] == "tool_use")
    assert use["name"] == "todo" and use["input"] == TODO
    assert turns[2]["content"][0]["type"] == "tool_result"
    assert turns[2]["content"][0]["tool_use_id"] == use["id"]
    assert turns[3]["content"] == [{"type": "text", "text": "Noted: ZEBRA."}]
    assert turns[4]["content"][-1]["text"] == "what was the code word?"

    fake_provider.queue(text("You are welcome."))
    third = run_hermes("-c", "-z", "thanks", env=env)
    assert third.returncode == 0, third.stderr
    last = fake_provider.requests[-1]
    assert check_well_formed(last) == []
    said = [(m["role"], m.get("content")) for m in last["messages"] if m["role"] != "system"]
    assert ("assistant", "It was ZEBRA.") in said and said[-1] == ("user", "thanks")

    sid = SessionDB().list_sessions()[0]["id"]
    rows = SessionDB().get_messages(sid)
    assert [r["role"] for r in rows] == ["user", "assistant", "tool", "assistant", "user",
                                         "assistant", "user", "assistant"]
    assert rows[5]["content"] == "It was ZEBRA." and not rows[5].get("tool_calls")
