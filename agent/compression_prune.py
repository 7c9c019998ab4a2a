"""Cheap pruning (SPEC §4): bulky or repeated tool outputs become one-line stubs, no model needed.
Pure. Also the last resort when a compacted history still does not fit, and the summary's cap.
"""
from __future__ import annotations

from typing import Callable, Optional

from hermes_core.messages import message_text
from hermes_core.tokens import PER_MESSAGE_OVERHEAD, estimate_message_tokens, estimate_text_tokens

SAME_OUTPUT_STUB = "[same output as an earlier call]"
PRUNED_PREFIX = "[tool output pruned: "

PRUNE_MIN_TOKENS = 200  # tool outputs bigger than this (outside the tail) become a stub
LAST_RESORT_PRUNE_TOKENS = 40  # when a no-model compaction still does not fit
DEDUP_MIN_CHARS = 64  # identical outputs shorter than this are not worth a back-reference


def _stub(m: dict, text: str, tokens: int, names: dict[str, str], seen: dict[str, int],
          index: int, dedup: bool, min_tokens: int) -> Optional[str]:
    """The stub replacing this tool output, or None to keep it."""
    if dedup and len(text) >= DEDUP_MIN_CHARS:
        if text in seen:
            return SAME_OUTPUT_STUB
        seen[text] = index
    if tokens - PER_MESSAGE_OVERHEAD > min_tokens:
        name = names.get(str(m.get("tool_call_id")), "tool")
        return f"{PRUNED_PREFIX}{name} returned {len(text)} chars]"
    return None


def prune_range(work: list[dict], toks: list[int], start: int, end: int, names: dict[str, str],
                seen: Optional[dict[str, int]] = None, dedup: bool = True,
                stop_when: Optional[Callable[[int], bool]] = None,
                min_tokens: int = PRUNE_MIN_TOKENS) -> int:
    """Stub bulky / duplicate tool outputs in ``work[start:end]`` in place (replacing the dicts,
    updating ``toks``). Returns the tokens saved."""
    saved = 0
    if seen is None:
        seen = {}
    for i in range(start, end):
        m = work[i]
        if m.get("role") != "tool":
            continue
        content = m.get("content")
        text = content if isinstance(content, str) else message_text(m)
        if not text or text == SAME_OUTPUT_STUB or text.startswith(PRUNED_PREFIX):
            continue
        stub = _stub(m, text, toks[i], names, seen, i, dedup, min_tokens)
        if stub is None:
            continue
        new = dict(m)
        new["content"] = stub
        t = estimate_message_tokens(new)
        if t >= toks[i]:
            continue
        saved += toks[i] - t
        toks[i] = t
        work[i] = new
        if stop_when is not None and stop_when(saved):
            break
    return saved


def _prune_all(part: list[dict], names: dict[str, str], need: int) -> int:
    toks = [estimate_message_tokens(m) for m in part]
    return prune_range(part, toks, 0, len(part), names, dedup=False,
                       stop_when=lambda got: got >= need, min_tokens=LAST_RESORT_PRUNE_TOKENS)


def last_resort(new: list[dict], offset: int, names: dict[str, str], need: int) -> int:
    """The tail alone is too big: stub smaller tool outputs too, the tail (from ``offset``) first,
    oldest first, then the head, until ``need`` tokens are saved. ``new`` changes in place;
    returns the tokens saved."""
    head_part, segment = new[:offset], new[offset:]
    cut = _prune_all(segment, names, need)
    if cut < need:
        cut += _prune_all(head_part, names, need - cut)
    if cut:
        new[:] = head_part + segment
    return cut


def truncate_summary(text: str, budget: int) -> str:
    """The summary within ``budget`` tokens, marked when it had to be cut."""
    text = text.strip()
    est = estimate_text_tokens(text)
    if est <= budget:
        return text
    cut = max(1, int(len(text) * budget / est * 0.97))
    return text[:cut].rstrip() + "\n[summary truncated]"
