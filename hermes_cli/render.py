"""Terminal output of a turn: streamed text, one line per tool call, a spinner, warnings.

The agent calls back from its own thread while the main thread waits, so every write goes through
one lock. On a terminal the reply is rendered as markdown while it streams (rich Live); elsewhere it
is printed as plain text as it arrives. A reply that did not stream is rendered once at the end.
rich is imported on first use only: `hermes -z`
never pays for it.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Any, Optional, TextIO

_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def _short(value: Any, limit: int = 60) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def args_preview(args: Any) -> str:
    """The most telling argument of a tool call in one short string (command, path, query...)."""
    if isinstance(args, dict):
        for key in ("command", "cmd", "path", "file_path", "query", "url", "pattern", "name",
                    "action"):
            if key in args and args[key] not in (None, ""):
                return _short(args[key])
        if args:
            return _short(", ".join(f"{k}={v}" for k, v in args.items()))
        return ""
    return _short(args) if args else ""


def tool_line(event: dict) -> str:
    """Plain text of a finished tool call: '✓ terminal  ls -la  (0.1s)  3 files'."""
    ok = bool(event.get("ok", True))
    mark = "✓" if ok else "✗"
    parts = [f"{mark} {event.get('name', '?')}"]
    preview = args_preview(event.get("args"))
    if preview:
        parts.append(preview)
    dur = event.get("duration")
    if isinstance(dur, (int, float)):
        parts.append(f"({dur:.1f}s)")
    summary = event.get("summary")
    if summary:
        parts.append("— " + _short(summary, 80))
    return "  ".join(parts)


class Renderer:
    """Writes one turn at a time. `out` gets the answer, `err` tool lines and warnings."""

    def __init__(self, out: Optional[TextIO] = None, err: Optional[TextIO] = None,
                 spinner: Optional[bool] = None, markdown: bool = True) -> None:
        self.out = out or sys.stdout
        self.err = err or self.out
        self._lock = threading.RLock()
        self._spin_enabled = self._isatty(self.err) if spinner is None else spinner
        self._spin_thread: Optional[threading.Thread] = None
        self._spin_stop = threading.Event()
        self._spin_label = ""
        self._markdown = markdown
        self._consoles: dict[int, Any] = {}
        self.streamed = False
        self._mid_line = False  # the answer stream left the cursor after text
        self._live: Any = None  # rich Live showing the streamed reply as markdown (terminals only)
        self._live_text = ""
        self._live_parsed_at = 0.0

    # ---- plumbing -----------------------------------------------------------------------
    @staticmethod
    def _isatty(f: TextIO) -> bool:
        try:
            return f.isatty()
        except (AttributeError, ValueError):
            return False

    def console(self, f: Optional[TextIO] = None) -> Any:
        """A rich Console bound to `f` (created lazily, one per stream)."""
        f = f or self.out
        con = self._consoles.get(id(f))
        if con is None:
            from rich.console import Console

            con = Console(file=f, highlight=False, soft_wrap=False)
            self._consoles[id(f)] = con
        return con

    def _end_line(self) -> None:
        if self._mid_line:
            self.out.write("\n")
            self.out.flush()
            self._mid_line = False

    # ---- spinner ------------------------------------------------------------------------
    def spinner_start(self, label: str = "thinking") -> None:
        """Animate a spinner on `err` until the next output; a no-op when it is not a terminal."""
        if not self._spin_enabled:
            return
        with self._lock:
            if self._mid_line or self._live is not None:
                return
            self._spin_label = label
            if self._spin_thread is not None:
                return
            self._spin_stop.clear()
            t = threading.Thread(target=self._spin, name="hermes-spinner", daemon=True)
            self._spin_thread = t
            t.start()

    def _spin(self) -> None:
        i = 0
        while not self._spin_stop.wait(0.1 if i else 0.0):
            with self._lock:
                if self._spin_stop.is_set():
                    break
                self.err.write(f"\r{_FRAMES[i % len(_FRAMES)]} {self._spin_label}…\x1b[K")
                self.err.flush()
            i += 1

    def spinner_stop(self) -> None:
        with self._lock:
            t = self._spin_thread
            if t is None:
                return
            self._spin_stop.set()
            self._spin_thread = None
            self.err.write("\r\x1b[K")
            self.err.flush()
        if t is not threading.current_thread():
            t.join(timeout=1)

    # ---- a turn -------------------------------------------------------------------------
    def begin_turn(self) -> None:
        self.streamed = False
        self._mid_line = False
        self.spinner_start("thinking")

    def on_delta(self, delta: str) -> None:
        if not delta:
            return
        with self._lock:
            self.spinner_stop()
            self.streamed = True
            if self._markdown and self._isatty(self.out):
                self._live_update(delta)
                return
            self.out.write(delta)
            self.out.flush()
            self._mid_line = not delta.endswith("\n")

    def _live_update(self, delta: str) -> None:
        """A terminal sees the reply as markdown while it streams (rich Live re-renders the
        text)."""
        from rich.markdown import Markdown

        self._live_text += delta
        now = time.monotonic()
        if self._live is None:
            from rich.live import Live

            self._live = Live(Markdown(self._live_text), console=self.console(self.out),
                              refresh_per_second=8,
                              vertical_overflow="visible")
            self._live.start()
            self._live_parsed_at = now
        elif now - self._live_parsed_at >= 0.1:  # re-parse at most ~10x a second, not per delta
            self._live.update(Markdown(self._live_text))
            self._live_parsed_at = now

    def _live_stop(self) -> None:
        """Freeze what was streamed so far (a tool line or warning goes below it)."""
        if self._live is not None:
            from rich.markdown import Markdown

            # the last deltas, whatever the throttle skipped
            self._live.update(Markdown(self._live_text))
            self._live.stop()
            self._live = None
            self._live_text = ""

    def on_tool(self, event: dict) -> None:
        kind = event.get("type")
        with self._lock:
            if kind == "tool_start":
                self._live_stop()
                self.spinner_stop()
                if self.err is self.out:
                    self._end_line()
                self.spinner_start(f"running {event.get('name', 'tool')}")
            elif kind == "tool_end":
                self.spinner_stop()
                if self.err is self.out:
                    self._end_line()
                from_color = "green" if event.get("ok", True) else "red"
                self.emit(self.err, "  " + tool_line(event), style=from_color)
                self.spinner_start("thinking")

    def on_status(self, kind: str, message: str) -> None:
        """Warnings are always shown (yellow); retries and info dimmer."""
        with self._lock:
            self._live_stop()
            spinning = self._spin_thread is not None  # e.g. a long tool call (subagents at work)
            self.spinner_stop()
            if self.err is self.out:
                self._end_line()
            icon, style = {"warning": ("⚠", "yellow"), "compression": ("⚠", "yellow"),
                           "retry": ("↻", "yellow"),
                           "info": ("•", "dim")}.get(kind, ("⚠", "yellow"))
            self.emit(self.err, f"{icon} {message}", style=style)
            if spinning:
                self.spinner_start(self._spin_label)

    def end_turn(self, final: Optional[str]) -> None:
        """Finish the answer: a newline after a stream, or the whole answer as markdown."""
        with self._lock:
            self._live_stop()
            self.spinner_stop()
            if self.streamed:
                self._end_line()
                return
            if final:
                if self._markdown and self._isatty(self.out):
                    from rich.markdown import Markdown

                    self.console(self.out).print(Markdown(final))
                else:
                    self.out.write(final.rstrip("\n") + "\n")
                    self.out.flush()

    # ---- plain messages -----------------------------------------------------------------
    def emit(self, f: TextIO, text: str, style: Optional[str] = None) -> None:
        if self._isatty(f):
            from rich.text import Text

            self.console(f).print(Text(text, style=style or ""), soft_wrap=True)
        else:
            f.write(text + "\n")
            f.flush()

    def info(self, text: str, style: Optional[str] = None) -> None:
        with self._lock:
            self._live_stop()
            self.spinner_stop()
            self._end_line()
            self.emit(self.out, text, style)

    def warn(self, text: str) -> None:
        self.info(text, "yellow")

    def error(self, text: str) -> None:
        with self._lock:
            self._live_stop()
            self.spinner_stop()
            self._end_line()
            self.emit(self.err, text, "red")

    def prompt_line(self, text: str) -> None:
        """Write a question without a newline (the approval prompt)."""
        with self._lock:
            self._live_stop()
            self.spinner_stop()
            self._end_line()
            self.err.write(text)
            self.err.flush()

