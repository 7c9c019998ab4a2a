"""Context compression decisions and assembly (SPEC §4). Pure: no I/O besides the injected
``summarize`` callable (see ``agent.summarizer.make_summarizer``).

The history given to :meth:`ContextCompressor.compress` excludes the system prompt (the agent
keeps that separately and byte-identical). ``agent.compression_plan`` cuts it into head, middle
and tail; the middle is replaced by one reference-only summary message.

Order of measures: cheap pruning of bulky tool outputs outside the tail
(``agent.compression_prune``), then an LLM summary of the middle, and when that fails a
deterministic extractive digest (only if the request no longer fits; otherwise the input is
returned untouched and a cooldown starts). This module keeps the state between passes
(cooldowns, anti-thrash) and the per-turn decisions.

Token counts: ``current_tokens`` is the size of the *history* (a real reading minus
system/tools, or None for the rough estimate); ``extra_tokens`` is what the request adds on top
(system prompt + tool schemas). ``before_tokens``/``after_tokens`` of a result are whole-request
figures (history + extra_tokens).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from agent.compaction_digest import digest
from agent.compression_plan import Plan, plan
from agent.compression_prune import (  # noqa: F401 - SAME_OUTPUT_STUB, PRUNED_PREFIX re-exported
    PRUNED_PREFIX, SAME_OUTPUT_STUB, last_resort, prune_range, truncate_summary,
)
from agent.summary_messages import (  # noqa: F401 - re-exported: the compressor's vocabulary
    SUMMARY_ACK, SUMMARY_END, SUMMARY_MARKER, is_compaction_message, is_summary_ack,
    is_summary_message, last_compaction_index, place_summary, split_summary, summary_block,
)
from hermes_core.messages import tool_call_names
from hermes_core.tokens import estimate_message_tokens

if TYPE_CHECKING:  # pragma: no cover
    from hermes_core.config import CompressionConfig

MIN_EFFECTIVE_CUT = 0.05  # a pass cutting less than this share of the request is ineffective
INEFFECTIVE_PASSES_TO_BLOCK = 2
PROBE_INTERVAL = 600.0  # seconds after which a blocked compressor may try again
COOLDOWNS = (60.0, 300.0, 900.0)
MIN_SUMMARY_CHARS = 20
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


@dataclass
class _Figures:
    """The token figures of one pass: per message, their sum, the history's size as the caller
    measured it, and what the request adds on top."""

    messages: list[dict]
    toks: list[int]
    est: int
    base: int
    extra: int

    @classmethod
    def of(cls, messages: list[dict], current_tokens: Optional[int],
           extra_tokens: int) -> "_Figures":
        toks = [estimate_message_tokens(m) for m in messages]
        est = sum(toks)
        base = int(current_tokens) if current_tokens is not None else est
        return cls(messages, toks, est, base, max(0, int(extra_tokens or 0)))

    @property
    def before(self) -> int:
        return self.base + self.extra

    @property
    def request(self) -> int:
        """The rough estimate of the whole request (what "effective" is measured against)."""
        return self.est + self.extra

    def after(self, cut: int) -> int:
        return max(0, self.base - cut) + self.extra

    def unchanged(self, warning: Optional[str] = None) -> CompressionResult:
        return CompressionResult(self.messages, False, False, False, False, self.before,
                                 self.before, warning)


def _middle(work: list[dict], cut: Plan) -> tuple[list[dict], list[str]]:
    """The messages to summarise and the texts of earlier summaries among them (folded into the
    new one)."""
    previous_parts: list[str] = []
    middle: list[dict] = []
    for m in work[cut.head_end:cut.tail_start]:
        if cut.summaries and is_compaction_message(m):
            text, rest = split_summary(m)
            if text:
                previous_parts.append(text)
            if rest is not None:
                middle.append(rest)
        else:
            middle.append(m)
    return middle, previous_parts


def _fmt_seconds(s: float) -> str:
    s = int(round(s))
    return f"{s} s" if s < 120 else f"{s // 60} min"


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
    def from_config(cls, cfg: "CompressionConfig", context_length: int,
                    summarize: Optional[Callable[..., str]] = None,
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
        """Automatic compression blocked by anti-thrash (until a low reading or the probe
        interval)."""
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
        """Record a real ``prompt_tokens`` reading; a reading under the threshold lifts
        anti-thrash."""
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
        return (f"Context summary failed ({reason}); retrying compression in "
                f"{_fmt_seconds(delay)}. {_INTACT}")

    def _summary_ok(self) -> None:
        self._failures = 0
        self._cooldown_until = None
        self.last_failure_reason = None

    # ---- the pass ----------------------------------------------------------------------------

    def _plan(self, messages: list[dict], toks: list[int]) -> Optional[Plan]:
        return plan(messages, toks, protect_first_n=self.protect_first_n,
                    protect_last_n=self.protect_last_n, tail_budget=self.tail_budget)

    def nothing_to_compact(self, messages: list[dict]) -> Optional[str]:
        """Why a pass over ``messages`` (the history, no system prompt) would leave them all as
        they are, or None when there is a middle to compact. Pure; for ``/compress``'s answer."""
        if self._plan(messages, [estimate_message_tokens(m) for m in messages]) is not None:
            return None
        return (f"all {len(messages)} messages are kept verbatim: the first "
                f"{self.protect_first_n} (compression.protect_first_n) and the recent tail "
                f"(compression.protect_last_n={self.protect_last_n}, about "
                f"{self.tail_budget:,} tokens) leave nothing between them to summarise")

    def compress(self, messages: list[dict], *, current_tokens: Optional[int] = None,
                 focus: Optional[str] = None, force: bool = False,
                 extra_tokens: int = 0) -> CompressionResult:
        """One pass: pruning, then a summary of the middle (or the digest); see the module
        docstring. The input list itself comes back when nothing changed."""
        fig = _Figures.of(messages, current_tokens, extra_tokens)
        cut = self._plan(messages, fig.toks)
        if cut is None:
            # nothing to compact yet: cheap, and the history will grow, so not a thrash signal
            return fig.unchanged()
        work = list(messages)
        names = tool_call_names(messages)
        saved = prune_range(work, fig.toks, 0, cut.tail_start, names, {})
        if saved > 0 and not force and focus is None:
            after = fig.after(saved)
            if after < self.threshold_tokens and saved >= MIN_EFFECTIVE_CUT * fig.request:
                self._record_pass(True, force)
                self._after_change()
                return CompressionResult(work, True, False, False, True, fig.before, after)
        middle, previous_parts = _middle(work, cut)
        summary_text: Optional[str] = None
        warning: Optional[str] = None
        fits_now = self.fits(fig.before)
        cooling = self.get_active_compression_failure_cooldown() is not None
        if self.summarize is not None and (force or not cooling):
            summary_text, reason = self._summarize(middle, previous_parts, focus)
            if reason is not None:
                warning = self._start_cooldown(reason)
                if fits_now:
                    return fig.unchanged(warning)
            else:
                self._summary_ok()
        elif self.summarize is not None and fits_now:
            # cooldown active and this is an automatic pass: leave the history alone while it fits
            return fig.unchanged()
        return self._finish(fig, work, cut, names, middle, previous_parts, summary_text, warning,
                            force)

    def _summarize(self, middle: list[dict], previous_parts: list[str],
                   focus: Optional[str]) -> tuple[Optional[str], Optional[str]]:
        """(summary, None) or (None, why it failed): the summary call may fail in any way."""
        previous = "\n\n".join(previous_parts) or None
        try:
            summarize: Callable[..., Any] = self.summarize  # type: ignore[assignment]
            out = summarize(middle, previous_summary=previous, focus=focus,
                            max_tokens=self.summary_budget)
        except Exception as exc:  # noqa: BLE001 - any failure of the summary call is survivable
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            kind = type(exc).__name__
            if kind == "SummaryError" and msg:  # already "<cause>: <detail>" from the summarizer
                return None, msg[:160]
            return None, (f"{kind}: {msg}"[:160] if msg else kind)
        if not isinstance(out, str):
            return None, f"summary was {type(out).__name__}, not text"
        if len(out.strip()) < MIN_SUMMARY_CHARS:
            return None, "summary was empty" if not out.strip() else "summary too short"
        return out, None

    def _finish(self, fig: _Figures, work: list[dict], cut: Plan, names: dict[str, str],
                middle: list[dict], previous_parts: list[str], summary_text: Optional[str],
                warning: Optional[str], force: bool) -> CompressionResult:
        """Head + the summary (or the digest) placed + tail; the last resort when that still
        does not fit; the pass recorded."""
        budget = self.summary_budget
        head, tail = work[:cut.head_end], work[cut.tail_start:]
        if summary_text is not None:
            block = summary_block(truncate_summary(summary_text, budget))
        else:
            block = summary_block(digest(middle, previous_parts, budget))
        fallback = summary_text is None
        placed = place_summary(block, head, tail)
        added = len(placed) - len(tail)  # 0: merged into tail[0]; 1: standalone; 2: with the ack
        new = head + placed
        toks = fig.toks
        new_est = (sum(toks[:cut.head_end])
                   + sum(estimate_message_tokens(m) for m in placed[:max(1, added)])
                   + sum(toks[cut.tail_start + (1 if added == 0 else 0):]))
        if not self.fits(fig.after(fig.est - new_est)):
            need = fig.after(fig.est - new_est) - self._window
            new_est -= last_resort(new, cut.head_end + added, names, need)
        if new_est >= fig.est:
            self._record_pass(False, force)
            return fig.unchanged(warning)
        cut_total = fig.est - new_est
        self._record_pass(cut_total >= MIN_EFFECTIVE_CUT * fig.request, force)
        self._after_change()
        if fallback and warning:
            warning = warning.replace(_INTACT, _CONDENSED)
        return CompressionResult(new, True, not fallback, fallback, False, fig.before,
                                 fig.after(cut_total), warning)

    def _after_change(self) -> None:
        self.compression_count += 1
        self.last_prompt_tokens = 0  # the old reading described a history that no longer exists
