"""Context compression decisions and assembly (SPEC §4). Pure: no I/O besides the injected
``summarize`` callable (see ``agent.summarizer.make_summarizer``).

The history given to :meth:`ContextCompressor.compress` excludes the system prompt (the agent keeps
that separately and byte-identical). It is split into

- **head**: the first ``protect_first_n`` messages (extended over the tool results of a tool call it
  contains), kept in order and never summarised;
- **tail**: the newest messages within ``target_ratio * threshold_tokens`` tokens (with a small
  message floor), always containing the last user message, never starting with a tool result;
- **middle**: the rest, replaced by one reference-only summary message.

Order of measures: cheap pruning of bulky tool outputs outside the tail, then an LLM summary of the
middle, and when that fails a deterministic extractive digest (only if the request no longer fits;
otherwise the input is returned untouched and a cooldown starts).

Token counts: ``current_tokens`` is the size of the *history* (a real reading minus system/tools, or
None for the rough estimate); ``extra_tokens`` is what the request adds on top (system prompt + tool
schemas). ``before_tokens``/``after_tokens`` of a result are whole-request figures
(history + extra_tokens).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from agent.compaction_digest import digest
from hermes_core.messages import message_text, safe_cut_index, tool_call_names
from hermes_core.tokens import PER_MESSAGE_OVERHEAD, estimate_message_tokens, estimate_text_tokens
from agent.summary_messages import (  # noqa: F401 - re-exported: the compressor's vocabulary
    SUMMARY_ACK, SUMMARY_END, SUMMARY_MARKER, is_compaction_message, is_summary_ack,
    is_summary_message, last_compaction_index, place_summary, split_summary, summary_block,
)

if TYPE_CHECKING:  # pragma: no cover
    from hermes_core.config import CompressionConfig

SAME_OUTPUT_STUB = "[same output as an earlier call]"
PRUNED_PREFIX = "[tool output pruned: "

PRUNE_MIN_TOKENS = 200          # tool outputs bigger than this (outside the tail) become a stub
LAST_RESORT_PRUNE_TOKENS = 40   # when a no-model compaction still does not fit
DEDUP_MIN_CHARS = 64            # identical outputs shorter than this are not worth a back-reference
MIN_EFFECTIVE_CUT = 0.05        # a pass cutting less than this share of the request is ineffective
INEFFECTIVE_PASSES_TO_BLOCK = 2
PROBE_INTERVAL = 600.0          # seconds after which a blocked compressor may try again
COOLDOWNS = (60.0, 300.0, 900.0)
MIN_SUMMARY_CHARS = 20
TAIL_HARD_FLOOR = 4             # messages always kept in the tail (capped by protect_last_n)
MIN_MIDDLE = 2                  # the tail never grows into these (there must be something to compact)
_INTACT = "Your conversation is intact."
_CONDENSED = ("Older turns were condensed without a model to fit the window; "
              "your conversation is intact in the session store.")


@dataclass
class CompressionResult:
    messages: list[dict]
    changed: bool
    summarized: bool
    fallback: bool
    pruned: bool
    before_tokens: int
    after_tokens: int
    warning: Optional[str] = None


# --------------------------------------------------------------------------------------
def _fmt_seconds(s: float) -> str:
    s = int(round(s))
    return f"{s} s" if s < 120 else f"{s // 60} min"


# --------------------------------------------------------------------------------------
# The compressor
# --------------------------------------------------------------------------------------


class ContextCompressor:
    """Decides when to compress and assembles the compacted history. See the module docstring."""

    def __init__(
        self,
        context_length: int,
        *,
        threshold: float = 0.50,
        threshold_tokens: Optional[int] = None,
        target_ratio: float = 0.20,
        protect_first_n: int = 3,
        protect_last_n: int = 20,
        output_reserve: Optional[int] = None,
        summarize: Optional[Callable[..., str]] = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not (0 < threshold <= 1):
            raise ValueError("threshold must be in (0, 1]")
        if not (0 < target_ratio <= 1):
            raise ValueError("target_ratio must be in (0, 1]")
        self.threshold = float(threshold)
        self._threshold_override = int(threshold_tokens) if threshold_tokens else None
        self.target_ratio = float(target_ratio)
        self.protect_first_n = max(0, int(protect_first_n))
        self.protect_last_n = max(1, int(protect_last_n))
        self._reserve_override = int(output_reserve) if output_reserve is not None else None
        self.summarize = summarize
        self._clock = clock

        self.last_prompt_tokens = 0
        self.last_usage_at: Optional[float] = None
        self.compression_count = 0

        self._ineffective = 0
        self._blocked_at: Optional[float] = None
        self._failures = 0
        self._cooldown_until: Optional[float] = None
        self.last_failure_reason: Optional[str] = None

        self.context_length = 0
        self.output_reserve = 0
        self._window = 0
        self.threshold_tokens = 0
        self.set_context_length(context_length)

    # ---- construction / limits ----------------------------------------------------------

    @classmethod
    def from_config(cls, cfg: "CompressionConfig", context_length: int, summarize: Optional[Callable[..., str]] = None,
                    **kwargs: Any) -> "ContextCompressor":
        return cls(
            context_length,
            threshold=cfg.threshold,
            threshold_tokens=cfg.threshold_tokens,
            target_ratio=cfg.target_ratio,
            protect_first_n=cfg.protect_first_n,
            protect_last_n=cfg.protect_last_n,
            summarize=summarize,
            **kwargs,
        )

    def set_context_length(self, n: int) -> None:
        """Recompute window and threshold (e.g. a provider stated a lower limit)."""
        n = max(2, int(n))
        self.context_length = n
        if self._reserve_override is not None:
            reserve = max(0, self._reserve_override)
        else:
            reserve = max(256, min(n // 8, 8192))
        if reserve >= n:
            reserve = n // 2
        self.output_reserve = reserve
        self._window = max(1, n - reserve)
        if self._threshold_override:
            self.threshold_tokens = max(1, min(self._threshold_override, self._window))
        else:
            self.threshold_tokens = max(1, int(self.threshold * self._window))

    @property
    def window(self) -> int:
        """Tokens available to the prompt: context_length minus the output reserve."""
        return self._window

    @property
    def summary_budget(self) -> int:
        """Token budget of one summary: about min(5% of the window, 10k), at least 256."""
        return max(256, min(int(self._window * 0.05), 10_000))

    @property
    def tail_budget(self) -> int:
        return max(1, int(self.target_ratio * self.threshold_tokens))

    def fits(self, tokens: int) -> bool:
        return tokens <= self._window

    # ---- per-turn decisions (O(1)) ------------------------------------------------------

    @property
    def auto_blocked(self) -> bool:
        """Automatic compression blocked by anti-thrash (until a low reading or the probe interval)."""
        at = self._blocked_at
        return at is not None and (self._clock() - at) < PROBE_INTERVAL

    def should_compress(self, tokens: int) -> bool:
        if tokens < self.threshold_tokens:
            return False
        return not self.auto_blocked

    def should_defer_preflight_to_real_usage(self, estimated_tokens: int) -> bool:
        """A real reading exists, is under the threshold, and only the rough estimate is over it."""
        real = self.last_prompt_tokens
        return 0 < real < self.threshold_tokens <= estimated_tokens

    def get_active_compression_failure_cooldown(self) -> Optional[float]:
        until = self._cooldown_until
        if until is None:
            return None
        left = until - self._clock()
        return left if left > 0 else None

    def update_from_usage(self, prompt_tokens: int) -> None:
        """Record a real ``prompt_tokens`` reading; a reading under the threshold lifts anti-thrash."""
        try:
            value = int(prompt_tokens)
        except (TypeError, ValueError):
            return
        if value <= 0:
            return
        self.last_prompt_tokens = value
        self.last_usage_at = self._clock()
        if value < self.threshold_tokens:
            self._ineffective = 0
            self._blocked_at = None

    # ---- bookkeeping ----------------------------------------------------------------------

    def _record_pass(self, effective: bool, force: bool) -> None:
        if effective:
            self._ineffective = 0
            self._blocked_at = None
        elif not force:
            self._ineffective += 1
            if self._ineffective >= INEFFECTIVE_PASSES_TO_BLOCK:
                self._blocked_at = self._clock()

    def _start_cooldown(self, reason: str) -> str:
        delay = COOLDOWNS[min(self._failures, len(COOLDOWNS) - 1)]
        self._failures += 1
        self._cooldown_until = self._clock() + delay
        self.last_failure_reason = reason
        return f"Context summary failed ({reason}); retrying compression in {_fmt_seconds(delay)}. {_INTACT}"

    def _summary_ok(self) -> None:
        self._failures = 0
        self._cooldown_until = None
        self.last_failure_reason = None

    # ---- planning ---------------------------------------------------------------------------

    def _plan(self, messages: list[dict], toks: list[int]) -> Optional[tuple[int, int, list[int]]]:
        """``(head_end, tail_start, summary_indices)`` or None when there is nothing to compact."""
        n = len(messages)
        if n < self.protect_first_n + MIN_MIDDLE + 1:
            return None
        summaries: list[int] = []
        last_user = -1
        for i, m in enumerate(messages):
            if is_summary_message(m):
                summaries.append(i)
                if m.get("role") == "user" and split_summary(m)[1] is not None:
                    last_user = i  # merged into a real user turn (histories written before SUMMARY_ACK)
            elif is_summary_ack(m):
                summaries.append(i)  # travels with its summary
            elif m.get("role") == "user":
                last_user = i

        head_end = min(self.protect_first_n, n)
        while head_end < n and messages[head_end].get("role") == "tool":
            head_end += 1
        for k in summaries:  # an earlier summary in the head is folded, so it moves to the middle
            if k < head_end:
                head_end = k
            break

        # tail by token budget, with a small message floor, leaving MIN_MIDDLE messages to compact
        budget = self.tail_budget
        hard_floor = min(self.protect_last_n, TAIL_HARD_FLOOR)
        soft_cap = 2 * budget
        limit = head_end + MIN_MIDDLE
        s, acc, count = n, 0, 0
        while s > limit:
            t = toks[s - 1]
            if count < hard_floor or acc + t <= budget or (count < self.protect_last_n and acc + t <= soft_cap):
                acc += t
                count += 1
                s -= 1
            else:
                break
        if last_user >= head_end:
            s = min(s, last_user)
        s = safe_cut_index(messages, s, "backward")
        if s < n and summaries and summaries[-1] >= s:
            k = summaries[-1]
            if last_user < head_end or last_user > k:
                s = safe_cut_index(messages, k + 1, "forward")
        if s <= head_end or s >= n:
            return None
        return head_end, s, summaries

    def nothing_to_compact(self, messages: list[dict]) -> Optional[str]:
        """Why a pass over ``messages`` (the history, no system prompt) would leave them all as they
        are, or None when there is a middle to compact. Pure; for ``/compress``'s answer."""
        if self._plan(messages, [estimate_message_tokens(m) for m in messages]) is not None:
            return None
        return (f"all {len(messages)} messages are kept verbatim: the first {self.protect_first_n} "
                f"(compression.protect_first_n) and the recent tail (compression.protect_last_n="
                f"{self.protect_last_n}, about {self.tail_budget:,} tokens) leave nothing between "
                "them to summarise")

    # ---- pruning ---------------------------------------------------------------------------

    @staticmethod
    def _prune_range(work: list[dict], toks: list[int], start: int, end: int, names: dict[str, str],
                     seen: Optional[dict[str, int]] = None, dedup: bool = True,
                     stop_when: Optional[Callable[[int], bool]] = None, min_tokens: int = PRUNE_MIN_TOKENS) -> int:
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
            stub = None
            if dedup and len(text) >= DEDUP_MIN_CHARS:
                if text in seen:
                    stub = SAME_OUTPUT_STUB
                else:
                    seen[text] = i
            if stub is None and toks[i] - PER_MESSAGE_OVERHEAD > min_tokens:
                name = names.get(str(m.get("tool_call_id")), "tool")
                stub = f"{PRUNED_PREFIX}{name} returned {len(text)} chars]"
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

    # ---- assembly --------------------------------------------------------------------------

    def _truncate_summary(self, text: str, budget: int) -> str:
        text = text.strip()
        est = estimate_text_tokens(text)
        if est <= budget:
            return text
        cut = max(1, int(len(text) * budget / est * 0.97))
        return text[:cut].rstrip() + "\n[summary truncated]"

    # ---- the pass ----------------------------------------------------------------------------

    def compress(self, messages: list[dict], *, current_tokens: Optional[int] = None, focus: Optional[str] = None,
                 force: bool = False, extra_tokens: int = 0) -> CompressionResult:
        extra = max(0, int(extra_tokens or 0))
        toks = [estimate_message_tokens(m) for m in messages]
        est = sum(toks)
        base = int(current_tokens) if current_tokens is not None else est
        before = base + extra

        def unchanged(warning: Optional[str] = None) -> CompressionResult:
            return CompressionResult(messages, False, False, False, False, before, before, warning)

        plan = self._plan(messages, toks)
        if plan is None:
            # nothing to compact yet: cheap, and the history will grow, so it is not a thrash signal
            return unchanged()
        head_end, tail_start, summaries = plan

        # 1. cheap pruning outside the tail
        work = list(messages)
        names = tool_call_names(messages)
        seen: dict[str, int] = {}
        saved = self._prune_range(work, toks, 0, tail_start, names, seen)
        request_est = est + extra
        if saved > 0 and not force and focus is None:
            after = max(0, base - saved) + extra
            if after < self.threshold_tokens and saved >= MIN_EFFECTIVE_CUT * request_est:
                self._record_pass(True, force)
                self._after_change()
                return CompressionResult(work, True, False, False, True, before, after)

        # earlier summaries in range are folded into the new one
        previous_parts: list[str] = []
        middle: list[dict] = []
        for i in range(head_end, tail_start):
            m = work[i]
            if summaries and is_compaction_message(m):
                text, rest = split_summary(m)
                if text:
                    previous_parts.append(text)
                if rest is not None:
                    middle.append(rest)
            else:
                middle.append(m)
        previous = "\n\n".join(previous_parts) or None
        budget = self.summary_budget
        fits_now = self.fits(before)

        warning: Optional[str] = None
        summary_text: Optional[str] = None
        use_llm = self.summarize is not None and (force or self.get_active_compression_failure_cooldown() is None)
        if use_llm:
            reason = None
            try:
                out = self.summarize(middle, previous_summary=previous, focus=focus, max_tokens=budget)
            except Exception as exc:  # noqa: BLE001 - any failure of the summary call is survivable
                msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                kind = type(exc).__name__
                if kind == "SummaryError" and msg:  # already "<cause>: <detail>" from the summarizer
                    reason = msg[:160]
                else:
                    reason = f"{kind}: {msg}"[:160] if msg else kind
            else:
                if not isinstance(out, str):
                    reason = f"summary was {type(out).__name__}, not text"
                elif len(out.strip()) < MIN_SUMMARY_CHARS:
                    reason = "summary was empty" if not out.strip() else "summary too short"
                else:
                    summary_text = out
            if reason is not None:
                warning = self._start_cooldown(reason)
                if fits_now:
                    return unchanged(warning)
            else:
                self._summary_ok()
        elif self.summarize is not None and fits_now:
            # cooldown active and this is an automatic pass: leave the history alone while it fits
            return unchanged()

        head = work[:head_end]
        tail = work[tail_start:]
        if summary_text is not None:
            block = summary_block(self._truncate_summary(summary_text, budget))
        else:
            block = summary_block(digest(middle, previous_parts, budget))
        fallback = summary_text is None
        placed = place_summary(block, head, tail)
        added = len(placed) - len(tail)  # 0: merged into tail[0]; 1: standalone; 2: with SUMMARY_ACK
        new = head + placed
        new_est = (sum(toks[:head_end]) + sum(estimate_message_tokens(m) for m in placed[:max(1, added)])
                   + sum(toks[tail_start + (1 if added == 0 else 0):]))

        if not self.fits(max(0, base - (est - new_est)) + extra):
            # last resort (the tail alone is too big): stub smaller tool outputs too, the tail first
            # (oldest first), then the head
            offset = head_end + added
            head_part, segment = new[:offset], new[offset:]
            need = max(0, base - (est - new_est)) + extra - self._window
            cut = self._prune_range(segment, [estimate_message_tokens(m) for m in segment], 0, len(segment),
                                    names, dedup=False, stop_when=lambda got: got >= need,
                                    min_tokens=LAST_RESORT_PRUNE_TOKENS)
            if cut < need:
                more = need - cut
                cut += self._prune_range(head_part, [estimate_message_tokens(m) for m in head_part], 0,
                                         len(head_part), names, dedup=False, stop_when=lambda got: got >= more,
                                         min_tokens=LAST_RESORT_PRUNE_TOKENS)
            if cut:
                new = head_part + segment
                new_est -= cut

        cut_total = est - new_est
        if new_est >= est:
            self._record_pass(False, force)
            return unchanged(warning)
        after = max(0, base - cut_total) + extra
        self._record_pass(cut_total >= MIN_EFFECTIVE_CUT * request_est, force)
        self._after_change()
        if fallback and warning:
            warning = warning.replace(_INTACT, _CONDENSED)
        return CompressionResult(new, True, not fallback, fallback, False, before, after, warning)

    def _after_change(self) -> None:
        self.compression_count += 1
        self.last_prompt_tokens = 0  # the old reading described a history that no longer exists
