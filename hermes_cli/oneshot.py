"""One-shot runs: `hermes chat -q MSG` (answer on stdout, progress on stderr) and `hermes -z MSG`
(the final answer alone on stdout, for scripts).

Kept lean on purpose: this path imports neither rich nor prompt_toolkit unless -q writes to a
terminal, so `hermes -z` starts about as fast as the openai SDK itself.
"""
from __future__ import annotations

import sys
from typing import Any, Optional


class TurnFailed(Exception):
    """The agent answered with an error: one line on stderr, exit `status`."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def _deny_without_terminal(command: str, reason: str) -> str:
    sys.stderr.write(f"hermes: denied `{command}` ({reason}): no terminal to ask; "
                     "rerun with --yolo to allow\n")
    return "deny"


def _plain_tool_line(event: dict) -> None:
    if event.get("type") == "tool_end":
        from hermes_cli.render import tool_line

        sys.stderr.write("  " + tool_line(event) + "\n")
        sys.stderr.flush()


class QuietNotes:
    """-z is for scripts: on failure stderr is exactly one line (the error). What needs attention
    (warnings, compactions, denied commands, the local-model notice) is held and written after the
    answer; retries are dropped (a failure after retries says so itself); info chatter never
    shows."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def status(self, kind: str, message: str) -> None:
        if kind not in ("info", "retry"):
            self.lines.append(f"⚠ {message}")

    def deny(self, command: str, reason: str) -> str:
        self.lines.append(f"hermes: denied `{command}` ({reason}): no terminal to ask; "
                          "rerun with --yolo "
                          "to allow")
        return "deny"

    def flush(self) -> None:
        for line in self.lines:
            sys.stderr.write(line + "\n")
        self.lines.clear()


def _plain_status(kind: str, message: str) -> None:
    sys.stderr.write(f"{'⚠' if kind != 'info' else '•'} {message}\n")
    sys.stderr.flush()


def _mcp_report(notes: Optional[QuietNotes]) -> Any:
    """MCP server news: failures always (once; with -z held with the other notes), connections only
    without -z."""
    def report(kind: str, line: str) -> None:
        if notes is not None:
            notes.status("warning" if kind != "info" else "info", line)
        else:
            _plain_status("warning" if kind != "info" else "info", line)

    return report


def outcome(res: Optional[dict]) -> tuple[int, Optional[str]]:
    """(exit status, error line) for a finished turn."""
    res = res or {}
    if res.get("interrupted"):
        return 130, "interrupted"
    if res.get("compression_deferred"):
        return 75, str(res.get("final_response") or res.get("error")
                       or "compression is running elsewhere; retry")
    if res.get("failed"):
        return 1, str(res.get("error") or res.get("final_response") or "the turn failed")
    if res.get("final_response") is None:
        return 1, (f"no final answer after {res.get('api_calls', '?')} model call(s); "
                   "raise --max-turns or rephrase")
    if not str(res["final_response"]).strip():
        return 1, (f"no answer came from the model ({res.get('api_calls', '?')} model call(s) "
                   "returned nothing to show); rephrase and try again")
    return 0, None


def _early_notes(args: Any, notice: Optional[str], quiet: bool) -> Optional[QuietNotes]:
    """-z holds what needs attention (config typos, the local-model notice) for after the answer;
    otherwise the notice goes to stderr now (config typos were written at start)."""
    if not quiet:
        if notice:
            sys.stderr.write(notice + "\n")
        return None
    notes = QuietNotes()
    notes.lines += [f"hermes: warning: {line}" for line in getattr(args, "config_warnings", [])]
    if notice:
        notes.lines.append(notice)
    return notes


def run(args: Any, cfg: Any, message: str, quiet: bool) -> int:
    """Run one turn. quiet=True is -z: nothing but the answer on stdout."""
    from hermes_cli.agent_factory import (build_agent, local_notice, open_db, provider_settings,
                                          resolve_session_arg)

    notes = _early_notes(args, local_notice(provider_settings(args, cfg)), quiet)
    images = _images(args, cfg)  # a missing or unreadable image fails before anything starts
    from tools.mcp.manager import shutdown_servers, start_servers
    # MCP servers connect while the agent is built; its first turn waits for them (each up to its
    # connect_timeout), so a one-shot answer can use their tools
    start_servers(cfg, report=_mcp_report(notes))
    db = open_db(cfg)
    session_id = resolve_session_arg(args, db)

    renderer = _renderer(quiet)
    hooks = _hooks(renderer, notes)
    agent = build_agent(args, cfg, session_db=db, session_id=session_id, hooks=hooks,
                        interactive=False)
    if session_id and not quiet:
        sys.stderr.write(f"• resumed session {session_id} ({len(agent.history())} messages)\n")
    message = _with_skill(message, cfg, quiet)
    message = _attach(message, images)  # type: ignore[assignment]
    streamed = {"any": False, "nl": True}

    def on_delta(delta: str) -> None:
        if not delta:
            return
        if renderer is not None:
            renderer.on_delta(delta)
        else:
            sys.stdout.write(delta)
            sys.stdout.flush()
        streamed["any"] = True
        streamed["nl"] = delta.endswith("\n")

    if renderer is not None:
        renderer.begin_turn()
    try:
        res = agent.run_conversation(message, stream_callback=None if quiet else on_delta)
    except KeyboardInterrupt:
        fn = getattr(agent, "interrupt", None)
        if callable(fn):
            fn()
        raise
    finally:
        if renderer is not None:
            renderer.spinner_stop()
        shutdown_servers()
    status, err = outcome(res)
    _print_answer(agent, res, status, notes, streamed)
    sys.stdout.flush()
    if status == 0:
        _finish_review(agent, res, quiet)
    if err:
        raise TurnFailed(err, status) if status != 130 else KeyboardInterrupt()
    return status


def _renderer(quiet: bool) -> Any:
    """The rich renderer on a terminal (not for -z, which prints only the answer), else None."""
    if quiet or not sys.stderr.isatty():
        return None
    from hermes_cli.render import Renderer

    return Renderer(out=sys.stdout, err=sys.stderr, markdown=False)


def _hooks(renderer: Any, notes: Any) -> Any:
    """Tool lines, status and approvals for this run: asked on a terminal, refused without one."""
    from agent.callbacks import AgentHooks

    if sys.stdin.isatty() and renderer is not None:
        from hermes_cli.approval_prompt import ask_approval_tty

        approval = lambda c, why: ask_approval_tty(renderer, c, why)  # noqa: E731
    else:
        approval = notes.deny if notes is not None else _deny_without_terminal
    if notes is not None:
        tool_cb, status_cb = None, notes.status
    elif renderer is not None:
        tool_cb, status_cb = renderer.on_tool, renderer.on_status
    else:
        tool_cb, status_cb = _plain_tool_line, _plain_status
    return AgentHooks(tool_progress=tool_cb, status=status_cb, approval=approval)


def _print_answer(agent: Any, res: Any, status: int, notes: Any, streamed: dict) -> None:
    """The answer on stdout unless it was streamed already; -z also flushes its held notes."""
    final = (res or {}).get("final_response")
    if notes is not None:
        if status == 0:
            sys.stdout.write(str(final).strip() + "\n")
            notes.flush()
    else:
        if streamed["any"]:
            if not streamed["nl"]:
                sys.stdout.write("\n")
        elif status == 0:
            sys.stdout.write(str(final).rstrip("\n") + "\n")
        sid = getattr(agent, "session_id", None)
        if sid and status == 0:
            sys.stderr.write(f"session {sid} (continue with `hermes chat -r {sid} -q ...`)\n")


def _images(args: Any, cfg: Any) -> list:
    """``--image PATH`` parts (ValueError naming the file when one cannot be attached)."""
    paths = getattr(args, "images", None) or []
    if not paths:
        return []
    from hermes_cli.agent_factory import provider_settings
    from hermes_cli.attachments import check_provider, max_bytes_of, read_image

    check_provider(provider_settings(args, cfg).provider)
    return [read_image(p, max_bytes=max_bytes_of(cfg)) for p in paths]


def _attach(message: str, images: list) -> Any:
    from hermes_cli.attachments import with_images

    return with_images(message, images)


def _with_skill(message: str, cfg: Any, quiet: bool) -> str:
    """`/<skill> [text]`: the message with the skill attached (any other text is sent as typed)."""
    if not message.lstrip().startswith("/"):
        return message
    if message.lstrip().startswith("//"):  # as in the chat: '//' sends a leading '/' as typed
        return message.lstrip()[1:]
    from hermes_core.config import hermes_home
    from tools.skills import invoke

    hit = invoke.expand(message, hermes_home(), cfg)
    missing = invoke.not_found(message, hermes_home(), cfg) if hit is None else None
    if missing is not None:
        from hermes_cli.agent_factory import UsageError

        name, close = missing
        near = f"; close: {', '.join(close)}" if close else ""
        raise UsageError(f"no skill {name}{near} (`hermes skills list` shows them); to send a "
                         "message that starts with '/', write '//' instead")
    if hit is None:
        return message
    if not quiet:
        sys.stderr.write(f"• using skill {hit[0].name}\n")
    return hit[1]


def _finish_review(agent: Any, res: Optional[dict], quiet: bool, timeout: float = 120.0) -> None:
    """The answer is out; a due skill review runs now, before the process exits (stderr only)."""
    from agent import skill_review as review

    started = review.after_turn(agent, res)
    if started is None:
        return
    if not quiet:
        sys.stderr.write("• reviewing this session for a skill to save or improve…\n")
        sys.stderr.flush()
    started.join(timeout)
    if started.is_alive():
        sys.stderr.write("⚠ the skill review did not finish in time and was stopped\n")
    elif started.outcome:
        sys.stderr.write(f"• {started.outcome}\n")
    sys.stderr.flush()
