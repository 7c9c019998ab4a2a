"""A session that cannot fit its window (issue 21, item 11): a message larger than the window is
cut for the model and kept whole in the store, summaries never nest, failed turns leave no
placeholder rows, and a stuck session answers again on the next turn without /new.

Pure decisions (agent.request_view, agent.compaction_digest, the compressor) are tested directly;
the end-to-end tests drive the real `hermes` binary against the loopback provider."""
from __future__ import annotations

import json

from agent.compaction_digest import EARLIER, digest, split_digest
from agent.context_compressor import ContextCompressor, is_summary_message, split_summary
from agent.request_view import MIN_CAP_TOKENS, NO_REPLY, message_cap, request_messages
from hermes_core.tokens import estimate_message_tokens, estimate_messages_tokens_rough
from hermes_state import SessionDB
from tests.cli.conftest import hermes_env, run_hermes
from tests.conftest import write_config
from tests.fake_provider import check_well_formed, estimate_prompt_tokens, text, window_limited

WINDOW = 6000
PROMPT_LIMIT = 5250  # what the provider accepts: the window less the output reserve
PARA = "lorem ipsum dolor sit amet, consectetur adipiscing elit. "  # 57 characters


def user(t: str) -> dict:
    return {"role": "user", "content": t}


def asst(t: str) -> dict:
    return {"role": "assistant", "content": t}


# ---- pure: the request view -----------------------------------------------------------------

def test_a_message_bigger_than_its_share_is_cut_for_the_model_only():
    big = "HEAD " + PARA * 700 + " TAIL"  # about 10,000 tokens
    history = [user("hi"), asst("hello"), user(big)]
    view, cut = request_messages(history, cap_tokens=1000)
    assert cut == [2] and history[2]["content"] == big  # the input (what is stored) is untouched
    sent = view[2]["content"]
    assert estimate_message_tokens(view[2]) <= 1000
    assert sent.startswith("HEAD ") and sent.endswith(" TAIL") and "characters cut here" in sent
    assert view[:2] == history[:2]


def test_the_biggest_messages_are_cut_until_the_request_fits():
    history = [user(PARA * 140), asst("ok"), user(PARA * 140), asst("ok"), user(PARA * 140)]
    before = estimate_messages_tokens_rough(history)  # about 6,000 tokens
    view, cut = request_messages(history, cap_tokens=5000, budget_tokens=3000)
    assert before > 3000 >= estimate_messages_tokens_rough(view)
    assert cut and all(estimate_message_tokens(view[i]) >= 0.8 * MIN_CAP_TOKENS for i in cut)


def test_two_user_messages_in_a_row_get_a_placeholder_on_the_wire_only():
    history = [user("first, which failed"), user("second")]
    view, cut = request_messages(history, cap_tokens=1000)
    assert [m["content"] for m in view] == ["first, which failed", NO_REPLY, "second"]
    assert check_well_formed(view) == [] and len(history) == 2 and cut == []


def test_message_cap_leaves_room_for_the_rest():
    assert message_cap(5250, 1250) == int(4000 * 0.45)
    assert message_cap(5250, 6000) == MIN_CAP_TOKENS  # a prompt bigger than the window


# ---- pure: summaries never nest -----------------------------------------------------------

def test_a_digest_carries_an_earlier_digest_instead_of_quoting_it():
    first = digest([user("request one"), asst("answer one")], ["model-written summary"], 1000)
    assert first.count(EARLIER) == 1 and "model-written summary" in first
    second = digest([user("request two"), asst("answer two")], [first], 1000)
    assert second.count(EARLIER) == 1 and second.count("Automatic summary unavailable") == 1
    earlier, items, covered = split_digest(second)
    assert earlier == "model-written summary" and covered == 4
    assert [t for _, t in items] == ["request one", "answer one", "request two", "answer two"]


def test_repeated_compactions_without_a_model_never_nest():
    calls = []

    def summarize(middle, previous_summary=None, focus=None, max_tokens=None):
        calls.append(len(middle))
        if len(calls) == 1:
            return "## Goal\nAnswer the numbered questions.\n## Current state\nSome answered."
        raise RuntimeError("summary model down")

    comp = ContextCompressor(WINDOW, summarize=summarize, protect_last_n=4)
    history: list[dict] = []
    for turn in range(12):
        history += [user(f"question {turn} " + PARA * 8), asst(f"answer {turn} " + PARA * 8)]
        # as after the provider said it overflowed: the no-model digest replaces the middle
        history = comp.compress(history, current_tokens=comp.window + 1, force=True).messages
    blocks = [split_summary(m)[0] for m in history if is_summary_message(m)]
    assert len(calls) >= 2 and len(blocks) == 1
    assert blocks[0].count(EARLIER) <= 1 and blocks[0].count("Automatic summary unavailable") == 1


def test_nothing_to_compact_says_why():
    comp = ContextCompressor(WINDOW)
    why = comp.nothing_to_compact([user("a"), asst("b"), user("c"), asst("d")])
    assert why and "all 4 messages are kept verbatim" in why and "protect_last_n" in why
    many = [m for i in range(30) for m in (user(f"q{i} " + PARA * 20), asst(f"a{i} " + PARA * 20))]
    assert comp.nothing_to_compact(many) is None


# ---- end to end: the real binary --------------------------------------------------------

def _setup(fake_provider, hermes_home) -> dict:
    write_config(hermes_home, f"model:\n  context_length: {WINDOW}\n")
    fake_provider.handler = window_limited(PROMPT_LIMIT, lambda body: text("noted"))
    return hermes_env(fake_provider)


def _stored(sid: str) -> list[dict]:
    db = SessionDB()
    try:
        return db.get_messages(sid, include_inactive=True)
    finally:
        db.close()


def test_8kb_messages_against_a_6000_token_window_keep_answering(fake_provider, hermes_home):
    env = _setup(fake_provider, hermes_home)
    sent = [f"part {i}: " + PARA * 145 for i in range(6)]  # 8 KB each
    for i, message in enumerate(sent):
        res = run_hermes("-z", message, *(["-c"] if i else []), env=env)
        assert res.returncode == 0 and res.stdout == "noted\n", (i, res.stderr)
    chats = [b for b in fake_provider.requests if b["messages"][-1]["content"] != "noted"]
    assert all(estimate_prompt_tokens(b) <= PROMPT_LIMIT for b in fake_provider.requests)
    assert all(check_well_formed(b) == [] for b in chats)
    sid = json.loads(run_hermes("sessions", "list", "--json", env=env).stdout)[0]["id"]
    rows = _stored(sid)
    stored_users = [m["content"] for m in rows if m["role"] == "user"]
    assert all(message in stored_users for message in sent)  # whole, every one of them
    texts = [str(m["content"]) for m in rows]
    assert not any(t.startswith("(no reply") for t in texts)
    assert all(t.count(EARLIER) <= 1 for t in texts)


def test_a_stuck_session_recovers_on_the_next_turn(fake_provider, hermes_home):
    env = _setup(fake_provider, hermes_home)
    huge = "BEGIN " + PARA * 700 + " END"  # 40 KB: no compaction can shrink it, it stays verbatim
    db = SessionDB()
    sid = db.create_session(source="cli")
    # what two failed turns left behind: the same huge message twice, never answered
    db.append_messages(sid, [user("hello"), asst("hi!"), user(huge), user(huge)])
    db.close()
    res = run_hermes("-z", "are you still there?", "-c", env=env)
    assert res.returncode == 0 and res.stdout == "noted\n", res.stderr
    assert "too big for the model" in res.stderr  # said once, after the answer
    last = fake_provider.requests[-1]
    assert estimate_prompt_tokens(last) <= PROMPT_LIMIT and check_well_formed(last) == []
    sent = [m["content"] for m in last["messages"]]
    assert sent[-1] == "are you still there?" and NO_REPLY in sent
    assert any(str(c).startswith("BEGIN ") and str(c).endswith(" END") for c in sent)
    assert [m["content"] for m in _stored(sid)].count(huge) == 2  # the store keeps them whole
