"""Where a compaction cuts the history (SPEC §4): head, middle, tail. Pure.

- **head**: the first ``protect_first_n`` messages (extended over the tool results of a tool call
  it contains), kept verbatim; an earlier summary inside it moves to the middle (it is folded);
- **tail**: the newest messages within the tail budget (with a small message floor), always
  holding the last user message, never starting with a tool result;
- **middle**: the rest, which one summary replaces. No middle, no plan.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from agent.summary_messages import is_summary_ack, is_summary_message, split_summary
from hermes_core.messages import safe_cut_index

TAIL_HARD_FLOOR = 4  # messages always kept in the tail (capped by protect_last_n)
MIN_MIDDLE = 2  # the tail never grows into these (there must be something to compact)


@dataclass(frozen=True)
class Plan:
    head_end: int  # messages[:head_end] is the head
    tail_start: int  # messages[tail_start:] is the tail
    summaries: list[int]  # indices of earlier summaries (and their acknowledgements)


def _scan(messages: list[dict]) -> tuple[list[int], int]:
    """(indices of earlier summaries and their acks, index of the last user message or -1)."""
    summaries: list[int] = []
    last_user = -1
    for i, m in enumerate(messages):
        if is_summary_message(m):
            summaries.append(i)
            if m.get("role") == "user" and split_summary(m)[1] is not None:
                last_user = i  # merged into a real user turn (histories from before SUMMARY_ACK)
        elif is_summary_ack(m):
            summaries.append(i)  # travels with its summary
        elif m.get("role") == "user":
            last_user = i
    return summaries, last_user


def _head_end(messages: list[dict], protect_first_n: int, summaries: list[int]) -> int:
    n = len(messages)
    head_end = min(protect_first_n, n)
    while head_end < n and messages[head_end].get("role") == "tool":
        head_end += 1
    if summaries and summaries[0] < head_end:  # an earlier summary in the head is folded
        head_end = summaries[0]
    return head_end


def _tail_by_budget(toks: list[int], limit: int, budget: int, protect_last_n: int) -> int:
    """The tail's start by token budget: at least the hard floor, within ``budget`` (or twice it
    while under ``protect_last_n`` messages), never reaching ``limit``."""
    hard_floor = min(protect_last_n, TAIL_HARD_FLOOR)
    soft_cap = 2 * budget
    s, acc, count = len(toks), 0, 0
    while s > limit:
        t = toks[s - 1]
        soft = count < protect_last_n and acc + t <= soft_cap
        if not (count < hard_floor or acc + t <= budget or soft):
            break
        acc += t
        count += 1
        s -= 1
    return s


def plan(messages: list[dict], toks: list[int], *, protect_first_n: int, protect_last_n: int,
         tail_budget: int) -> Optional[Plan]:
    """The cut of ``messages`` (``toks``: their token estimates), or None when there is nothing
    to compact."""
    n = len(messages)
    if n < protect_first_n + MIN_MIDDLE + 1:
        return None
    summaries, last_user = _scan(messages)
    head_end = _head_end(messages, protect_first_n, summaries)
    s = _tail_by_budget(toks, head_end + MIN_MIDDLE, tail_budget, protect_last_n)
    if last_user >= head_end:
        s = min(s, last_user)
    s = safe_cut_index(messages, s, "backward")
    if s < n and summaries and summaries[-1] >= s:
        k = summaries[-1]
        if last_user < head_end or last_user > k:
            s = safe_cut_index(messages, k + 1, "forward")
    if s <= head_end or s >= n:
        return None
    return Plan(head_end, s, summaries)
