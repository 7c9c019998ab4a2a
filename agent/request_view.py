"""What the model is sent for a history, when that differs from what is stored. Pure.

Two cases, both only on the wire (the store keeps every message as it was written):

- **A message too big for the window** (a pasted log, a huge tool output) is cut to its head and
  tail with a note in the middle, so the turn can go ahead instead of failing on every retry; no
  compaction can shrink a single message that is kept verbatim.
- **Two user messages in a row** (the earlier turn failed before any answer): a placeholder answer
  between them keeps the alternation providers require. It is never stored, so a session whose
  turns keep failing does not pile up placeholder rows.
"""
from __future__ import annotations

import operator
from typing import Any, Optional

from hermes_core.tokens import estimate_message_tokens, estimate_text_tokens

NO_REPLY = "(no reply: the previous turn did not complete)"
MIN_CAP_TOKENS = 256  # a message is never cut below this
NO_CAP = 1 << 40  # request_messages(..., NO_CAP): nothing is cut, only placeholders added
CAP_SHARE = 0.45  # of the window left after the system prompt and the tools, per message
_NOTE = ("\n\n[… {cut:,} characters cut here for the model: the message is larger than its "
         "context window allows; the whole text is kept in the session store …]\n\n")


def message_cap(window: int, fixed_tokens: int) -> int:
    """The most tokens one message may take in a request of ``window`` with ``fixed_tokens`` of
    system prompt and tool schemas: a share of the rest, so a summary and the newest ones fit."""
    return max(MIN_CAP_TOKENS, int((window - fixed_tokens) * CAP_SHARE))


def shorten_text(text: str, max_tokens: int) -> str:
    """``text`` cut to about ``max_tokens``: two thirds head, one third tail, the note between."""
    tokens = estimate_text_tokens(text)
    if tokens <= max_tokens:
        return text
    per_token = len(text) / max(1, tokens)
    keep = max(1, int((max_tokens - estimate_text_tokens(_NOTE.format(cut=len(text))))
                      * per_token * 0.95))
    head, tail = (keep * 2) // 3, keep - (keep * 2) // 3
    return text[:head] + _NOTE.format(cut=len(text) - head - tail) + text[len(text) - tail:]


def shorten_message(msg: dict, max_tokens: int) -> Optional[dict]:
    """A copy of ``msg`` whose text fits ``max_tokens``; None when it fits already (or has no text
    to cut: tool calls and images are left alone)."""
    if estimate_message_tokens(msg) <= max_tokens:
        return None
    content = msg.get("content")
    if isinstance(content, str):
        return {**msg, "content": shorten_text(content, max_tokens)}
    if isinstance(content, list):
        texts = [p for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        if not texts:
            return None
        share = max(MIN_CAP_TOKENS // 2, max_tokens // len(texts))
        parts = [{**p, "text": shorten_text(p["text"], share)} if p in texts else p
                 for p in content]
        return {**msg, "content": parts}
    return None


def _fit_total(msgs: list[dict], toks: list[int], budget: int, cut: set[int]) -> None:
    """Cut the biggest messages (in place in ``msgs``, a copy, and ``toks``, their estimates) until
    their sum fits ``budget``, none aimed below MIN_CAP_TOKENS: what compaction could not shrink
    (kept verbatim) still goes."""
    total = sum(toks)
    for i in sorted(range(len(msgs)), key=lambda k: toks[k], reverse=True):
        excess = total - budget
        if excess <= 0 or toks[i] <= MIN_CAP_TOKENS:
            return
        short = shorten_message(msgs[i], max(MIN_CAP_TOKENS, toks[i] - excess))
        if short is None:
            continue
        after = estimate_message_tokens(short)
        if after < toks[i]:
            msgs[i], total, toks[i] = short, total - toks[i] + after, after
            cut.add(i)


def request_messages(messages: list[dict], cap_tokens: int,
                     budget_tokens: Optional[int] = None) -> tuple[list[dict], list[int]]:
    """(messages to send, indices of ``messages`` that were cut). Each message is held to
    ``cap_tokens``; with ``budget_tokens`` the biggest are cut further until all of them fit it.
    The input is not changed."""
    cut: set[int] = set()
    msgs = list(messages)
    if budget_tokens is not None or cap_tokens < NO_CAP:  # each message estimated once a call
        toks = [estimate_message_tokens(m) for m in msgs]
        for i, n in enumerate(toks):
            short = shorten_message(msgs[i], cap_tokens) if n > cap_tokens else None
            if short is not None:
                msgs[i], toks[i] = short, estimate_message_tokens(short)
                cut.add(i)
        if budget_tokens is not None and sum(toks) > budget_tokens:
            _fit_total(msgs, toks, budget_tokens, cut)
    return _with_placeholders(msgs), sorted(cut)


def _with_placeholders(msgs: list[dict]) -> list[dict]:
    out: list[dict] = []
    last_role = None
    for msg in msgs:
        role = msg.get("role")
        if role == "user" and last_role == "user":
            out.append({"role": "assistant", "content": NO_REPLY})
        out.append(msg)
        if role != "system":
            last_role = role
    return out


def _same_prefix(now: list[dict], seen: list[dict]) -> int:
    """How many leading messages of ``now`` are the very objects of ``seen`` (compared in C)."""
    n = min(len(now), len(seen))
    same = list(map(operator.is_, now[:n], seen[:n]))
    return same.index(False) if False in same else n


class RequestView:
    """``request_messages`` for one agent's history, which grows at its end between requests:
    each message's estimate and cut are kept while it stays in place, so a request pays for the
    messages added since, not for the whole history again (600 messages cost about 1 ms a
    request here before). A compaction, an ``/undo`` or a caller's own history is taken afresh
    from the first message that differs. Same results as ``request_messages``."""

    def __init__(self) -> None:
        self._key: tuple[int, Optional[int]] = (-1, None)
        self._seen: list[dict] = []
        self._toks: list[int] = []
        self._cut: dict[int, dict] = {}  # index -> the shortened copy sent instead
        self._roles: list[Any] = []  # the role a following user message is checked against
        self._holes: list[int] = []  # indices that a placeholder answer goes before

    def messages(self, messages: list[dict], cap_tokens: int,
                 budget_tokens: Optional[int] = None) -> tuple[list[dict], list[int]]:
        """``request_messages(messages, cap_tokens, budget_tokens)``."""
        if (cap_tokens, budget_tokens) != self._key:
            self.__init__()  # type: ignore[misc]
            self._key = (cap_tokens, budget_tokens)
        self._keep(_same_prefix(messages, self._seen))
        for msg in messages[len(self._seen):]:
            self._add(msg, cap_tokens)
        if budget_tokens is not None and sum(self._toks) > budget_tokens:
            return request_messages(messages, cap_tokens, budget_tokens)  # rare: cut to fit
        msgs = list(messages)
        for i, short in self._cut.items():
            msgs[i] = short
        if self._holes:
            msgs = _with_placeholders(msgs)
        return msgs, sorted(self._cut)

    def _keep(self, n: int) -> None:
        for kept in (self._seen, self._toks, self._roles):
            del kept[n:]
        self._cut = {i: m for i, m in self._cut.items() if i < n}
        self._holes = [i for i in self._holes if i < n]

    def _add(self, msg: dict, cap_tokens: int) -> None:
        i = len(self._seen)
        n = estimate_message_tokens(msg)
        short = shorten_message(msg, cap_tokens) if n > cap_tokens else None
        if short is not None:
            self._cut[i], n = short, estimate_message_tokens(short)
        role, before = msg.get("role"), self._roles[-1] if self._roles else None
        if role == "user" and before == "user":
            self._holes.append(i)
        self._seen.append(msg)
        self._toks.append(n)
        self._roles.append(before if role == "system" else role)
