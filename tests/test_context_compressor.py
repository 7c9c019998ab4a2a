"""ContextCompressor: pure decisions and assembly (SPEC §4). No I/O: summarize is a plain function."""
from __future__ import annotations

import random
from typing import Any, Optional

import pytest

from hermes_core.config import CompressionConfig
from agent.context_compressor import (
    COOLDOWNS,
    PROBE_INTERVAL,
    SAME_OUTPUT_STUB,
    SUMMARY_MARKER,
    CompressionResult,
    ContextCompressor,
    is_compaction_message,
    is_summary_ack,
    is_summary_message,
    last_compaction_index,
    place_summary,
    split_summary,
)
from agent.compaction_digest import digest
from hermes_core.messages import alternation_problems, find_tool_pair_violations, message_text
from hermes_core.tokens import estimate_messages_tokens_rough
from tests.fake_provider import check_well_formed

# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, s: float) -> None:
        self.t += s


class Recorder:
    """A summarize function that records its calls and returns a fixed or computed text."""

    def __init__(self, reply: Any = None, exc: Optional[BaseException] = None):
        self.calls: list[dict] = []
        self.reply = reply
        self.exc = exc

    def __call__(self, messages, previous_summary=None, focus=None, max_tokens=2000):
        self.calls.append({"messages": list(messages), "previous_summary": previous_summary,
                           "focus": focus, "max_tokens": max_tokens})
        if self.exc is not None:
            raise self.exc
        if self.reply is not None:
            return self.reply
        return f"## Goal\nSummary #{len(self.calls)} of {len(messages)} messages."


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def asst(text: str) -> dict:
    return {"role": "assistant", "content": text}


def asst_calls(*ids: str, name: str = "read_file", content=None) -> dict:
    return {"role": "assistant", "content": content,
            "tool_calls": [{"id": i, "type": "function", "function": {"name": name, "arguments": '{"path": "x"}'}}
                           for i in ids]}


def result(cid: str, content: str = "ok") -> dict:
    return {"role": "tool", "tool_call_id": cid, "content": content}


def chat(turns: int, size: int = 400, prefix: str = "q") -> list[dict]:
    out = []
    for i in range(turns):
        out.append(user(f"{prefix}{i} please do task number {i} " + "x" * size))
        out.append(asst(f"done {i} " + "y" * size))
    return out


def gen_history(rng: random.Random, turns: int) -> list[dict]:
    """Random user / assistant / tool-call sequences (always well formed)."""
    msgs: list[dict] = []
    cid = 0
    outputs = ["same output " * 40, "tiny", "z" * 3000]
    for t in range(turns):
        if rng.random() < 0.1:
            msgs.append({"role": "user", "content": [{"type": "text", "text": f"turn {t} multi-part " + "u" * rng.randint(0, 600)}]})
        else:
            msgs.append(user(f"turn {t} request " + "u" * rng.randint(0, 1500)))
        rounds = rng.choice([0, 0, 1, 2, 4])
        for _ in range(rounds):
            ids = []
            for _ in range(rng.randint(1, 3)):
                cid += 1
                ids.append(f"call_{cid}")
            msgs.append(asst_calls(*ids, name=rng.choice(["read_file", "terminal", "search"]),
                                   content=rng.choice([None, "", "let me check"])))
            order = ids[:]
            rng.shuffle(order)
            for i in order:
                out = rng.choice(outputs + ["r" * rng.randint(0, 5000)])
                msgs.append(result(i, out))
        if rounds == 0 or rng.random() < 0.85:  # sometimes the turn was interrupted before a final answer
            msgs.append(asst(f"answer {t} " + "a" * rng.randint(0, 1200)))
    return msgs


def last_user_text(msgs: list[dict]) -> str:
    for m in reversed(msgs):
        if m["role"] != "user":
            continue
        if is_summary_message(m):
            rest = split_summary(m)[1]
            if rest is None:
                continue
            m = rest
        return message_text(m)
    return ""


def summaries_in(msgs: list[dict]) -> list[dict]:
    return [m for m in msgs if is_summary_message(m)]


def est(msgs: list[dict]) -> int:
    return estimate_messages_tokens_rough(msgs)


# ---------------------------------------------------------------------------------------
# window / threshold math
# ---------------------------------------------------------------------------------------


def test_window_and_threshold_defaults():
    c = ContextCompressor(100_000)
    assert c.output_reserve == 8192
    assert c.window == 100_000 - 8192
    assert c.threshold_tokens == int(0.5 * c.window)
    assert c.summary_budget == min(int(0.05 * c.window), 10_000)
    c = ContextCompressor(8000)
    assert c.output_reserve == 1000 and c.window == 7000 and c.threshold_tokens == 3500
    c = ContextCompressor(1000)
    assert c.output_reserve == 256 and c.window == 744
    assert c.summary_budget == 256  # floor
    big = ContextCompressor(1_000_000)
    assert big.summary_budget == 10_000  # cap


def test_overrides_and_config():
    c = ContextCompressor(100_000, threshold=0.8, output_reserve=4000)
    assert c.window == 96_000 and c.threshold_tokens == int(0.8 * 96_000)
    c = ContextCompressor(100_000, threshold_tokens=30_000)
    assert c.threshold_tokens == 30_000
    c = ContextCompressor(10_000, threshold_tokens=50_000)  # never beyond the window
    assert c.threshold_tokens == c.window
    cfg = CompressionConfig(threshold=0.6, target_ratio=0.3, protect_first_n=2, protect_last_n=8)
    c = ContextCompressor.from_config(cfg, 32_000)
    assert (c.protect_first_n, c.protect_last_n, c.target_ratio) == (2, 8, 0.3)
    assert c.threshold_tokens == int(0.6 * c.window)
    cfg = CompressionConfig(threshold_tokens=12_345)
    assert ContextCompressor.from_config(cfg, 100_000).threshold_tokens == 12_345


def test_set_context_length_recomputes():
    c = ContextCompressor(200_000)
    c.set_context_length(50_000)
    assert c.context_length == 50_000
    assert c.window == 50_000 - 6250
    assert c.threshold_tokens == int(0.5 * c.window)
    assert not c.fits(c.window + 1) and c.fits(c.window)


def test_should_compress_boundary():
    c = ContextCompressor(10_000)
    assert not c.should_compress(c.threshold_tokens - 1)
    assert c.should_compress(c.threshold_tokens)


def test_should_defer_preflight_to_real_usage():
    c = ContextCompressor(10_000)
    over = c.threshold_tokens + 500
    assert not c.should_defer_preflight_to_real_usage(over)  # no real reading yet
    c.update_from_usage(c.threshold_tokens - 100)
    assert c.last_prompt_tokens == c.threshold_tokens - 100
    assert c.should_defer_preflight_to_real_usage(over)  # estimate ran high
    assert not c.should_defer_preflight_to_real_usage(c.threshold_tokens - 1)  # nothing to defer
    c.update_from_usage(c.threshold_tokens + 100)
    assert not c.should_defer_preflight_to_real_usage(over)  # real reading is over too
    c.update_from_usage(0)  # junk readings are ignored
    assert c.last_prompt_tokens == c.threshold_tokens + 100


# ---------------------------------------------------------------------------------------
# head / tail selection
# ---------------------------------------------------------------------------------------


def test_nothing_to_do_returns_same_object():
    c = ContextCompressor(10_000, summarize=Recorder())
    msgs = chat(2)
    r = c.compress(msgs)
    assert r.messages is msgs and not r.changed and not r.summarized
    assert r.before_tokens == r.after_tokens == est(msgs)


def test_basic_summary_keeps_head_and_tail_verbatim():
    rec = Recorder()
    c = ContextCompressor(10_000, summarize=rec)
    msgs = chat(20)
    r = c.compress(msgs)
    assert r.changed and r.summarized and not r.fallback and not r.pruned
    assert r.messages[:3] == msgs[:3] and all(a is b for a, b in zip(r.messages[:3], msgs[:3]))
    assert r.messages[-1] is msgs[-1]
    assert len(summaries_in(r.messages)) == 1
    assert r.after_tokens < r.before_tokens
    assert r.after_tokens == est(r.messages)
    # the summarizer saw exactly the middle
    kept = {id(m) for m in r.messages}
    assert [m for m in msgs if id(m) not in kept] == rec.calls[0]["messages"]
    assert rec.calls[0]["previous_summary"] is None
    assert rec.calls[0]["max_tokens"] == c.summary_budget
    assert msgs == chat(20)  # input untouched


def test_head_extends_over_tool_results():
    msgs = [user("start " + "s" * 100), asst_calls("a", "b"), result("a", "A" * 50), result("b", "B" * 50)]
    msgs += chat(20)
    c = ContextCompressor(10_000, protect_first_n=2, summarize=Recorder())
    r = c.compress(msgs)
    assert r.changed
    assert r.messages[:4] == msgs[:4]  # assistant call kept together with both results
    assert find_tool_pair_violations(r.messages) == []


def test_tail_never_starts_with_tool_result():
    rng = random.Random(5)
    msgs = chat(10)
    msgs.append(user("last request"))
    for k in range(12):
        msgs.append(asst_calls(f"t{k}"))
        msgs.append(result(f"t{k}", "r" * rng.randint(100, 900)))
    msgs.append(asst("final"))
    for ratio in (0.01, 0.05, 0.1, 0.3):
        c = ContextCompressor(20_000, target_ratio=ratio, protect_last_n=3, summarize=Recorder())
        r = c.compress(msgs)
        assert r.changed
        assert find_tool_pair_violations(r.messages) == []
        assert check_well_formed(r.messages) == []
        assert any(m is msgs[20] for m in r.messages)  # the last user message is kept verbatim


def test_last_user_message_kept_even_beyond_tail_budget():
    msgs = chat(10)
    msgs.append(user("THE LAST REQUEST"))
    for k in range(30):
        msgs.append(asst_calls(f"t{k}"))
        msgs.append(result(f"t{k}", "small"))
    msgs.append(asst("final"))
    c = ContextCompressor(8000, target_ratio=0.05, protect_last_n=2, summarize=Recorder())
    r = c.compress(msgs)
    assert r.changed
    assert last_user_text(r.messages) == "THE LAST REQUEST"
    assert check_well_formed(r.messages) == []


def test_last_user_in_head_lets_the_tool_loop_be_compacted():
    # one long agentic turn: the only user message is in the head
    msgs = [user("refactor everything")]
    for k in range(40):
        msgs.append(asst_calls(f"t{k}", content=f"step {k}"))
        msgs.append(result(f"t{k}", f"output {k} " + "o" * 300))
    c = ContextCompressor(8000, protect_first_n=1, summarize=Recorder())
    r = c.compress(msgs)
    assert r.changed and r.summarized
    assert r.messages[0] is msgs[0]
    assert check_well_formed(r.messages) == []
    assert alternation_problems(r.messages) == []


# ---------------------------------------------------------------------------------------
# placement
# ---------------------------------------------------------------------------------------

BLOCK = SUMMARY_MARKER + "\nthe summary\n[END OF SUMMARY]"

HEAD_ENDINGS = {
    "empty": [],
    "user": [user("u0")],
    "assistant": [user("u0"), asst("a0")],
    "tool": [user("u0"), asst_calls("h1"), result("h1")],
}
TAIL_STARTS = {
    "user": [user("u9"), asst("a9")],
    "user_parts": [{"role": "user", "content": [{"type": "text", "text": "u9"}]}, asst("a9")],
    "assistant": [asst("a9")],
    "assistant_calls": [asst_calls("t9"), result("t9"), asst("a9")],
}


@pytest.mark.parametrize("head_kind", list(HEAD_ENDINGS))
@pytest.mark.parametrize("tail_kind", list(TAIL_STARTS))
def test_placement_keeps_alternation_in_every_combination(head_kind, tail_kind):
    head, tail = HEAD_ENDINGS[head_kind], TAIL_STARTS[tail_kind]
    before = alternation_problems(head) + alternation_problems(tail)
    placed = place_summary(BLOCK, head, tail)
    out = head + placed
    assert alternation_problems(out) == before == []
    assert find_tool_pair_violations(out) == []
    assert len(summaries_in(out)) == 1
    if not head:
        assert out[0]["role"] == "user"  # a leading summary is a user message
    # nothing of the tail was lost, and the user's own message is never merged with the summary
    if tail[0]["role"] == "user":
        assert placed[len(placed) - len(tail)] is tail[0]
    else:
        assert message_text(tail[0]) in message_text(placed[0]) + message_text(placed[1] if len(placed) > 1 else {})
    assert not any(m["role"] == "user" and split_summary(m)[1] is not None for m in summaries_in(out))
    if len(tail) > 1:
        assert placed[-1] is tail[-1]
    # merged messages are copies, the input is untouched
    assert not is_summary_message(tail[0])


def test_summary_is_never_merged_into_the_users_message():
    question = user("the question")
    placed = place_summary(BLOCK, [asst("a")], [question])
    assert [m["role"] for m in placed] == ["user", "assistant", "user"]
    assert split_summary(placed[0]) == ("the summary", None) and placed[2] is question
    assert is_summary_ack(placed[1]) and split_summary(placed[1]) == ("", None)
    assert [is_compaction_message(m) for m in placed] == [True, True, False]
    assert last_compaction_index(placed) == 1 and last_compaction_index([question]) == -1


def test_last_compaction_index_finds_every_shape_of_summary():
    parts = {"role": "user", "content": [{"type": "text", "text": BLOCK}]}
    tool = {"role": "tool", "tool_call_id": "t", "content": BLOCK}  # a tool's words: not one
    plain = [user("q " * 50), asst("a " * 50)] * 50
    assert last_compaction_index(plain) == -1
    assert last_compaction_index([*plain, parts, *plain]) == 100
    assert last_compaction_index([user(BLOCK), *plain, tool, user("x")]) == 0
    assert last_compaction_index([*place_summary(BLOCK, [asst("a")], [user("q")]), *plain]) == 1


def test_merged_summary_splits_back():
    msg = place_summary(BLOCK, [user("u")], [asst("the answer")])[0]
    assert msg["role"] == "assistant" and is_summary_message(msg)
    text, rest = split_summary(msg)
    assert text == "the summary" and rest["content"] == "the answer"
    standalone = place_summary(BLOCK, [user("u")], [user("q")])[0]
    assert standalone["role"] == "assistant"
    assert split_summary(standalone) == ("the summary", None)


# ---------------------------------------------------------------------------------------
# property-style: many random histories
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(60))
def test_random_histories_stay_well_formed(seed):
    rng = random.Random(seed)
    msgs = gen_history(rng, rng.randint(3, 40))
    assert check_well_formed(msgs) == []
    c = ContextCompressor(
        rng.choice([2_000, 8_000, 16_000, 64_000]),
        protect_first_n=rng.randint(0, 5),
        protect_last_n=rng.randint(1, 20),
        target_ratio=rng.choice([0.05, 0.2, 0.5]),
        summarize=Recorder(),
    )
    input_ids = {tc["id"] for m in msgs for tc in m.get("tool_calls") or []}
    out = msgs
    for _round in range(3):
        r = c.compress(out, force=True)
        if not r.changed:
            assert r.messages is out
        new = r.messages
        assert find_tool_pair_violations(new) == []
        assert check_well_formed(new) == [], check_well_formed(new)
        assert last_user_text(new) == last_user_text(msgs)
        assert len(summaries_in(new)) <= 1
        acks = [i for i, m in enumerate(new) if is_summary_ack(m)]  # only right after a user-role summary
        assert len(acks) <= 1
        assert all(new[i - 1]["role"] == "user" and is_summary_message(new[i - 1]) for i in acks)
        assert not any(m["role"] == "user" and split_summary(m)[1] is not None for m in summaries_in(new))
        # no invented ids, no result dropped whose call is kept
        call_ids = {tc["id"] for m in new for tc in m.get("tool_calls") or []}
        result_ids = {m["tool_call_id"] for m in new if m["role"] == "tool"}
        assert call_ids <= input_ids and call_ids == result_ids
        # head preserved (roles/ids; tool contents may be stubbed)
        k = min(c.protect_first_n, len(msgs))
        if r.changed:
            for a, b in zip(new[:k], msgs[:k]):
                if is_summary_message(a):
                    break
                assert a["role"] == b["role"] and a.get("tool_call_id") == b.get("tool_call_id")
        # keep compacting the compacted history, grown by one more turn
        out = new + [user(f"more {_round}"), asst("ok " + "m" * 2000)]
        msgs = out


@pytest.mark.parametrize("seed", range(40))
def test_random_histories_fallback_fits_and_stays_well_formed(seed):
    rng = random.Random(1000 + seed)
    msgs = gen_history(rng, rng.randint(20, 60))
    c = ContextCompressor(
        rng.choice([4_000, 8_000, 16_000]),
        protect_first_n=rng.randint(0, 5),
        protect_last_n=rng.randint(1, 20),
        target_ratio=rng.choice([0.05, 0.2, 0.5]),
        summarize=Recorder(exc=TimeoutError("timed out")),
    )
    tokens = est(msgs)
    r = c.compress(msgs)
    assert check_well_formed(r.messages) == []
    assert last_user_text(r.messages) == last_user_text(msgs)
    if c.fits(tokens):
        assert r.messages is msgs and not r.changed
    else:
        assert r.changed and r.fallback
        assert c.fits(est(r.messages))
        assert len(summaries_in(r.messages)) == 1


# ---------------------------------------------------------------------------------------
# pruning
# ---------------------------------------------------------------------------------------


def test_pruning_alone_when_enough():
    rec = Recorder()
    msgs = [user("start"), asst("ok")]
    for k in range(6):
        msgs += [user(f"read file {k}"), asst_calls(f"c{k}", name="read_file"), result(f"c{k}", f"{k}" * 4000),
                 asst(f"file {k} read")]
    msgs += [user("again"), asst_calls("d1", name="terminal"), result("d1", "1" * 4000), asst("same")]
    msgs += chat(3, size=10, prefix="tail")
    c = ContextCompressor(12_000, summarize=rec, protect_last_n=4, target_ratio=0.05)
    assert c.should_compress(est(msgs))
    r = c.compress(msgs)
    assert r.changed and r.pruned and not r.summarized and not r.fallback
    assert rec.calls == []
    tools = [m for m in r.messages if m["role"] == "tool"]
    assert tools[0]["content"] == "[tool output pruned: read_file returned 4000 chars]"
    assert tools[-1]["content"] == SAME_OUTPUT_STUB  # identical to the output of c1
    assert len(r.messages) == len(msgs)
    assert r.after_tokens < c.threshold_tokens
    assert msgs[4]["content"] == "0" * 4000  # input untouched
    assert find_tool_pair_violations(r.messages) == []


def test_tail_tool_outputs_are_not_pruned():
    msgs = chat(12, size=300)
    msgs += [user("read it"), asst_calls("z"), result("z", "Q" * 2000), asst("read")]
    c = ContextCompressor(16_000, summarize=Recorder())
    r = c.compress(msgs)
    assert r.changed
    assert r.messages[-2]["content"] == "Q" * 2000


def test_focus_and_force_skip_the_prune_only_shortcut():
    msgs = [user("start"), asst("ok")]
    for k in range(6):
        msgs += [user(f"read {k}"), asst_calls(f"c{k}"), result(f"c{k}", f"{k}" * 4000), asst("read")]
    msgs += chat(3, size=10)
    rec = Recorder()
    c = ContextCompressor(40_000, summarize=rec, target_ratio=0.05)
    r = c.compress(msgs, focus="the files")
    assert r.summarized and rec.calls[0]["focus"] == "the files"
    # the summarizer got the pruned middle, not the raw outputs
    assert all(len(message_text(m)) < 200 for m in rec.calls[0]["messages"] if m["role"] == "tool")


# ---------------------------------------------------------------------------------------
# summary folding
# ---------------------------------------------------------------------------------------


def test_compress_twice_folds_into_one_summary():
    rec = Recorder()
    c = ContextCompressor(10_000, summarize=rec)
    msgs = chat(20)
    r1 = c.compress(msgs)
    assert len(summaries_in(r1.messages)) == 1
    first_text, _ = split_summary(summaries_in(r1.messages)[0])
    assert first_text.startswith("## Goal\nSummary #1")
    grown = r1.messages + chat(20, prefix="later")
    r2 = c.compress(grown)
    assert r2.changed and r2.summarized
    found = summaries_in(r2.messages)
    assert len(found) == 1
    assert rec.calls[1]["previous_summary"] == first_text
    assert not any(is_summary_message(m) for m in rec.calls[1]["messages"])
    assert "Summary #2" in found[0]["content"]
    assert r2.messages[:3] == msgs[:3]


def test_summary_in_head_is_folded_not_kept():
    rec = Recorder()
    c = ContextCompressor(10_000, protect_first_n=0, summarize=rec)
    r1 = c.compress(chat(20))
    assert is_summary_message(r1.messages[0]) and r1.messages[0]["role"] == "user"
    c.protect_first_n = 3  # the summary now sits inside the head
    r2 = c.compress(r1.messages + chat(20, prefix="later"))
    assert len(summaries_in(r2.messages)) == 1
    assert rec.calls[1]["previous_summary"] is not None
    assert check_well_formed(r2.messages) == []


def test_summary_is_truncated_to_budget():
    c = ContextCompressor(10_000, summarize=Recorder(reply="word " * 20_000))
    r = c.compress(chat(20))
    s = summaries_in(r.messages)[0]
    assert len(message_text(s)) < c.summary_budget * 4 + 300
    assert "[summary truncated]" in message_text(s)


# ---------------------------------------------------------------------------------------
# failure safety and cooldown
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [
    Recorder(exc=RuntimeError("boom")),
    Recorder(exc=TimeoutError("timed out")),
    Recorder(exc=ConnectionError("connection reset")),
    Recorder(reply=""),
    Recorder(reply="   "),
    Recorder(reply="too short"),
    Recorder(reply=12345),
])
def test_failure_when_fitting_returns_input_unchanged(bad):
    clock = FakeClock()
    c = ContextCompressor(10_000, summarize=bad, clock=clock)
    msgs = chat(40, size=300)
    assert c.fits(est(msgs)) and c.should_compress(est(msgs))
    r = c.compress(msgs)
    assert r.messages is msgs and not r.changed and not r.fallback
    assert r.warning and r.warning.startswith("Context summary failed (")
    assert "60 s" in r.warning and "intact" in r.warning
    assert c.get_active_compression_failure_cooldown() == pytest.approx(60)


def test_failure_when_not_fitting_falls_back_to_digest():
    clock = FakeClock()
    c = ContextCompressor(8_000, summarize=Recorder(exc=TimeoutError("read timed out")), clock=clock)
    msgs = [user("hello"), asst("hi")]
    for k in range(30):
        msgs += [user(f"request-{k}: please handle item {k} " + "r" * 300),
                 asst_calls(f"c{k}", name="terminal"), result(f"c{k}", "out " * 300),
                 asst(f"answer-{k}: handled " + "a" * 300)]
    msgs += chat(2, size=50, prefix="tail")
    before = est(msgs)
    assert not c.fits(before)
    r = c.compress(msgs)
    assert r.changed and r.fallback and not r.summarized
    assert r.warning and "60 s" in r.warning
    assert c.fits(est(r.messages)) and c.fits(r.after_tokens)
    digest = [m for m in r.messages if is_summary_message(m)]
    assert len(digest) == 1 and message_text(digest[0]).startswith(SUMMARY_MARKER)
    text = message_text(digest[0])
    kept = {id(m) for m in r.messages}
    middle_requests = [m["content"] for m in msgs if m["role"] == "user" and id(m) not in kept]
    assert middle_requests
    for req in middle_requests:
        assert req.split(":")[0] + ":" in text
    assert check_well_formed(r.messages) == []
    assert r.messages[:2] == msgs[:2]


def test_digest_lists_requests_and_final_answers():
    c = ContextCompressor(200_000)
    middle = [user("request-1: build it"), asst_calls("x"), result("x", "noise " * 100), asst("answer-1: built"),
              user("request-2: " + "long " * 200)]
    text = digest(middle, ["old summary text"], c.summary_budget)
    assert "request-1: build it" in text and "answer-1: built" in text and "old summary text" in text
    assert "noise" not in text
    line = [ln for ln in text.splitlines() if "request-2" in ln][0]
    assert len(line) <= 220 and line.endswith("…")


def test_extra_tokens_count_toward_fitting():
    c = ContextCompressor(10_000, summarize=Recorder(exc=RuntimeError("down")))
    msgs = chat(40, size=300)
    tokens = est(msgs)
    assert c.fits(tokens)
    r = c.compress(msgs, extra_tokens=c.window - tokens + 500)
    assert r.changed and r.fallback
    assert r.before_tokens == tokens + c.window - tokens + 500
    assert c.fits(r.after_tokens)


def test_cooldown_escalates_and_resets_with_fake_clock():
    clock = FakeClock()
    rec = Recorder(exc=RuntimeError("provider down"))
    c = ContextCompressor(10_000, summarize=rec, clock=clock)
    msgs = chat(40, size=300)

    r = c.compress(msgs)
    assert "60 s" in r.warning and len(rec.calls) == 1
    # during the cooldown automatic passes skip the LLM and stay silent
    clock.advance(30)
    assert c.get_active_compression_failure_cooldown() == pytest.approx(30)
    r = c.compress(msgs)
    assert r.messages is msgs and r.warning is None and len(rec.calls) == 1

    clock.advance(31)
    assert c.get_active_compression_failure_cooldown() is None
    r = c.compress(msgs)
    assert len(rec.calls) == 2 and "5 min" in r.warning
    assert c.get_active_compression_failure_cooldown() == pytest.approx(COOLDOWNS[1])

    clock.advance(COOLDOWNS[1] + 1)
    r = c.compress(msgs)
    assert len(rec.calls) == 3 and "15 min" in r.warning
    assert c.get_active_compression_failure_cooldown() == pytest.approx(COOLDOWNS[2])

    clock.advance(COOLDOWNS[2] + 1)
    r = c.compress(msgs)
    assert c.get_active_compression_failure_cooldown() == pytest.approx(COOLDOWNS[2])  # stays at the max

    # a success resets the ladder
    clock.advance(COOLDOWNS[2] + 1)
    rec.exc = None
    r = c.compress(msgs)
    assert r.summarized and r.warning is None
    assert c.get_active_compression_failure_cooldown() is None
    rec.exc = RuntimeError("again")
    r = c.compress(msgs + chat(10, prefix="more"))
    assert "60 s" in r.warning


def test_cooldown_not_fitting_uses_digest_without_llm():
    clock = FakeClock()
    rec = Recorder(exc=RuntimeError("down"))
    c = ContextCompressor(8_000, summarize=rec, clock=clock)
    small = chat(20, size=100)
    c.compress(small)
    assert len(rec.calls) == 1
    big = chat(40, size=600)
    assert not c.fits(est(big))
    r = c.compress(big)
    assert len(rec.calls) == 1  # no LLM during the cooldown
    assert r.fallback and r.changed and r.warning is None
    assert c.fits(r.after_tokens)


def test_force_tries_llm_during_cooldown():
    clock = FakeClock()
    rec = Recorder(exc=RuntimeError("down"))
    c = ContextCompressor(10_000, summarize=rec, clock=clock)
    msgs = chat(40, size=300)
    c.compress(msgs)
    rec.exc = None
    r = c.compress(msgs, force=True)
    assert len(rec.calls) == 2 and r.summarized
    assert c.get_active_compression_failure_cooldown() is None


def test_no_summarizer_means_deterministic_compaction():
    c = ContextCompressor(10_000)
    r = c.compress(chat(20))
    assert r.changed and r.fallback and not r.summarized and r.warning is None
    assert len(summaries_in(r.messages)) == 1


# ---------------------------------------------------------------------------------------
# anti-thrash
# ---------------------------------------------------------------------------------------


def _ineffective_history() -> list[dict]:
    # a tiny middle next to a huge tail: compacting the middle cannot cut 5%
    msgs = chat(3, size=10)
    for k in range(2):
        msgs += [user(f"big {k} " + "b" * 12000), asst(f"big answer {k} " + "c" * 12000)]
    return msgs


def test_anti_thrash_blocks_after_two_ineffective_passes_and_unblocks_on_low_reading():
    clock = FakeClock()
    c = ContextCompressor(20_000, protect_first_n=1, protect_last_n=8, summarize=Recorder(), clock=clock)
    msgs = _ineffective_history()
    tokens = est(msgs)
    assert c.should_compress(tokens)
    c.compress(msgs)
    assert not c.auto_blocked
    c.compress(msgs)
    assert c.auto_blocked
    assert not c.should_compress(tokens)
    c.update_from_usage(c.threshold_tokens + 10)  # still over: stays blocked
    assert c.auto_blocked
    c.update_from_usage(c.threshold_tokens - 10)
    assert not c.auto_blocked and c.should_compress(tokens)


def test_anti_thrash_probe_interval():
    clock = FakeClock()
    c = ContextCompressor(20_000, protect_first_n=1, protect_last_n=8, summarize=Recorder(), clock=clock)
    msgs = _ineffective_history()
    c.compress(msgs)
    c.compress(msgs)
    assert c.auto_blocked
    clock.advance(PROBE_INTERVAL - 1)
    assert c.auto_blocked
    clock.advance(2)
    assert not c.auto_blocked and c.should_compress(c.threshold_tokens)
    c.compress(msgs)  # the probe is ineffective too: blocked again
    assert c.auto_blocked


def test_nothing_to_do_is_not_a_thrash_signal():
    c = ContextCompressor(10_000, summarize=Recorder())
    for _ in range(5):
        assert not c.compress(chat(2)).changed
    assert not c.auto_blocked


def test_effective_pass_resets_counter_and_manual_passes_do_not_block():
    clock = FakeClock()
    c = ContextCompressor(20_000, protect_first_n=1, protect_last_n=8, summarize=Recorder(), clock=clock)
    bad = _ineffective_history()
    c.compress(bad)
    c.compress(chat(40, size=300))  # effective
    c.compress(bad)
    assert not c.auto_blocked
    for _ in range(5):
        c.compress(bad, force=True)
    assert not c.auto_blocked


def test_compaction_invalidates_last_real_reading():
    c = ContextCompressor(10_000, summarize=Recorder())
    c.update_from_usage(9000)
    r = c.compress(chat(20))
    assert r.changed and c.last_prompt_tokens == 0 and c.compression_count == 1


def test_current_tokens_drives_fit_decision():
    c = ContextCompressor(10_000, summarize=Recorder(exc=RuntimeError("x")))
    msgs = chat(40, size=300)
    r = c.compress(msgs, current_tokens=c.window + 100)  # the real reading says it does not fit
    assert r.changed and r.fallback
    assert r.before_tokens == c.window + 100
    assert r.after_tokens < r.before_tokens


def test_result_type():
    r = ContextCompressor(10_000).compress([])
    assert isinstance(r, CompressionResult) and r.messages == [] and not r.changed
