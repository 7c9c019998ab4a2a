"""Keep a small model's echoes of its own tool calls out of the answer.

The embedded provider renders earlier tool calls and results into the prompt as plain lines
(`[called tool NAME with arguments {...}]`, `Tool result (NAME): ...`) because the model's chat
template knows no tool roles. A 135M model then tends to "answer" by copying such a line, and the
user would read a tool call as the reply ("[called tool terminal with arguments {...}]" was the
whole answer to "What files are here?"). Lines that start like our rendering are dropped, also
from a stream, where a line is held back only while it could still turn out to be one.
"""
from __future__ import annotations

CALL_PREFIX = "[called tool "
RESULT_PREFIX = "Tool result ("
PREFIXES = ("[called ", RESULT_PREFIX)  # the model also shortens it: "[called todo with ..."


def render_call(name: str, arguments: str) -> str:
    """How an earlier tool call appears in a plain-text prompt."""
    return f"{CALL_PREFIX}{name} with arguments {arguments}]"


def render_result(name: str, text: str) -> str:
    """How a tool result appears in a plain-text prompt."""
    return f"{RESULT_PREFIX}{name}): {text}"


class EchoFilter:
    """Feed text as it arrives; get back what the user should see (whole marker lines removed)."""

    def __init__(self) -> None:
        self._pending = ""  # start of the current line, held while it may still be a marker
        self._mode = "undecided"  # for the current line: "undecided", "pass" or "drop"
        self._started = False  # blank output before the first words is held back, then dropped

    def feed(self, text: str) -> str:
        out: list[str] = []
        for ch in text:
            if self._mode == "pass":
                out.append(ch)
            elif self._mode == "undecided":
                self._pending += ch
                head = self._pending.lstrip()
                if head.startswith(PREFIXES):
                    self._mode, self._pending = "drop", ""
                elif ch == "\n" or not any(p.startswith(head) for p in PREFIXES):
                    out.append(self._pending)
                    self._mode, self._pending = "pass", ""
            if ch == "\n":
                self._mode = "undecided"
        return self._lead("".join(out))

    def _lead(self, text: str) -> str:
        if self._started or not text.strip():
            return text if self._started else ""
        self._started = True
        return text.lstrip()

    def flush(self) -> str:
        """The held-back end of the text (a line that stopped before it could be a marker)."""
        rest, self._pending = ("" if self._mode == "drop" else self._pending), ""
        self._mode = "undecided"
        return self._lead(rest)


def strip_echoes(text: str) -> str:
    """`text` without marker lines; "" when nothing else was said."""
    f = EchoFilter()
    return (f.feed(text) + f.flush()).rstrip()
