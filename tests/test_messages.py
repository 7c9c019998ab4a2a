"""Pure message helpers: tool pairs, alternation, safe cut points."""
from __future__ import annotations

from hermes_core.messages import (
    STUB_RESULT,
    alternation_problems,
    find_tool_pair_violations,
    is_safe_cut,
    message_text,
    safe_cut_index,
    sanitize_tool_pairs,
    tool_call_ids,
    tool_call_names,
)


def call(cid: str, name: str = "read_file", args: str = "{}") -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def asst_calls(*ids: str, content=None) -> dict:
    return {"role": "assistant", "content": content, "tool_calls": [call(i) for i in ids]}


def result(cid: str, content: str = "ok") -> dict:
    return {"role": "tool", "tool_call_id": cid, "content": content}


U = {"role": "user", "content": "hi"}
A = {"role": "assistant", "content": "hello"}


def test_tool_call_ids_and_names():
    msg = asst_calls("a", "b")
    assert tool_call_ids(msg) == ["a", "b"]
    assert tool_call_ids(U) == []
    assert tool_call_ids(result("a")) == []
    assert tool_call_names([U, msg]) == {"a": "read_file", "b": "read_file"}


def test_valid_history_has_no_violations():
    msgs = [U, asst_calls("a", "b"), result("b"), result("a"), A, U]
    assert find_tool_pair_violations(msgs) == []
    assert sanitize_tool_pairs(msgs) == msgs


def test_orphan_and_missing_results_are_reported():
    msgs = [U, result("zz"), asst_calls("a", "b"), result("a"), A]
    problems = find_tool_pair_violations(msgs)
    assert any("zz" in p for p in problems)
    assert any("'b'" in p and "no tool result" in p for p in problems)
    assert len(problems) == 2


def test_result_after_intervening_message_is_orphan():
    msgs = [U, asst_calls("a"), U, result("a")]
    problems = find_tool_pair_violations(msgs)
    assert len(problems) == 2  # call unanswered in its block, result orphaned


def test_duplicate_result_is_orphan():
    msgs = [U, asst_calls("a"), result("a"), result("a")]
    assert len(find_tool_pair_violations(msgs)) == 1


def test_trailing_unanswered_call():
    msgs = [U, asst_calls("a")]
    assert len(find_tool_pair_violations(msgs)) == 1
    fixed = sanitize_tool_pairs(msgs)
    assert fixed[-1] == {"role": "tool", "tool_call_id": "a", "content": STUB_RESULT}
    assert find_tool_pair_violations(fixed) == []


def test_sanitize_drops_orphans_and_stubs_missing_in_place():
    msgs = [U, result("zz"), asst_calls("a", "b"), result("a"), A, U]
    fixed = sanitize_tool_pairs(msgs)
    assert find_tool_pair_violations(fixed) == []
    assert [m.get("role") for m in fixed] == ["user", "assistant", "tool", "tool", "assistant", "user"]
    assert fixed[3]["tool_call_id"] == "b" and fixed[3]["content"] == STUB_RESULT
    assert fixed[0] is U and fixed[4] is A  # shared, not copied
    assert len(msgs) == 6  # input untouched


def test_alternation_problems():
    assert alternation_problems([U, A, U]) == []
    assert alternation_problems([U, asst_calls("a"), result("a"), A, U]) == []
    assert len(alternation_problems([U, U])) == 1
    assert len(alternation_problems([U, A, A])) == 1
    assert len(alternation_problems([U, result("a")])) == 1
    # system messages are neutral
    assert alternation_problems([{"role": "system", "content": "s"}, U, {"role": "system", "content": "x"}, A]) == []


def test_safe_cut_index_never_splits_a_pair():
    msgs = [U, asst_calls("a", "b"), result("a"), result("b"), A, U]
    assert safe_cut_index(msgs, 3, "backward") == 1
    assert safe_cut_index(msgs, 2, "forward") == 4
    assert safe_cut_index(msgs, 4, "backward") == 4
    assert safe_cut_index(msgs, 99, "forward") == 6
    assert safe_cut_index(msgs, -3, "backward") == 0
    for i in range(len(msgs) + 1):
        for d in ("backward", "forward"):
            j = safe_cut_index(msgs, i, d)
            assert is_safe_cut(msgs, j)
            assert find_tool_pair_violations(msgs[j:]) == [] or j == 0


def test_message_text_handles_parts():
    assert message_text({"content": None}) == ""
    assert message_text({"content": [{"type": "text", "text": "a"}, {"type": "image_url"}, "b"]}) == "a\nb"
