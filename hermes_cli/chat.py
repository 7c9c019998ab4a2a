"""The interactive chat: a prompt_toolkit REPL around `ChatSession`, which does the real work.

`ChatSession` needs no terminal (tests call its methods directly): it runs each turn in a worker
thread so the main thread stays free to catch Ctrl+C (-> agent.interrupt()) and to ask approval
questions the agent thread queues. Only `run_repl` touches prompt_toolkit.
"""
from __future__ import annotations

import queue
import signal
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from hermes_cli import slash
from hermes_cli.chat_commands import SlashCommands
from hermes_cli.approval_prompt import approval_timeout, ask_approval_tty
from hermes_cli.prompt_input import QuitArm, prompt_session
from hermes_cli.render import Renderer


@dataclass
class _ApprovalRequest:
    command: str
    reason: str
    answer: str = "deny"
    done: threading.Event = field(default_factory=threading.Event)


class ChatSession(SlashCommands):
    """Slash commands and turns over one AIAgent; callable without a terminal."""

    def __init__(self, agent_factory: Callable[[Optional[str]], Any], renderer: Renderer, *,
                 session_id: Optional[str] = None, db: Any = None, yolo: bool = False,
                 ask_approval: Optional[Callable[[str, str], str]] = None,
                 debug: bool = False, notice: Optional[Callable[[str], None]] = None) -> None:
        self.r = renderer
        self.yolo = yolo
        self.debug = debug
        self.agent_factory = agent_factory
        self._db = db
        self._ask = ask_approval or (lambda c, why: ask_approval_tty(self.r, c, why))
        self._approvals: "queue.Queue[_ApprovalRequest]" = queue.Queue()
        # the skill review's line
        self._notice = notice or (lambda line: self.r.info(line, "green"))
        self._skills_seen: tuple[float, list[tuple[str, str]]] = (float("-inf"), [])
        self.agent = agent_factory(session_id)
        self.turns = 0

    @property
    def db(self) -> Any:
        return self._db if self._db is not None else getattr(self.agent, "session_db", None)

    # ---- approval (called from the agent's thread) ------------------------------------
    def approval_callback(self, command: str, reason: str) -> str:
        if self.yolo:
            return "once"
        req = _ApprovalRequest(command, reason)
        if threading.current_thread() is threading.main_thread():
            self._serve(req)
            return req.answer
        self._approvals.put(req)
        if not req.done.wait(approval_timeout() + 10):
            return "deny"
        return req.answer

    def _serve(self, req: _ApprovalRequest) -> None:
        try:
            answer = self._ask(req.command, req.reason)
            req.answer = answer if answer in ("once", "always", "deny") else "deny"
        except KeyboardInterrupt:
            req.answer = "deny"
            self._interrupt()  # before the agent thread resumes, so it stops instead of going on
            raise
        except Exception:  # noqa: BLE001 - a broken prompt must fail closed, not crash the turn
            req.answer = "deny"
        finally:
            req.done.set()
        if req.answer == "deny":
            self.r.info("Denied.", "yellow")
        self.r.spinner_start("working")

    # ---- running work off the main thread ----------------------------------------------
    def run_in_worker(self, fn: Callable[[], Any], on_interrupt: Optional[Callable[[], None]] = None
                      ) -> tuple[Any, Optional[BaseException], bool]:
        """(result, error, interrupted). Ctrl+C interrupts the agent (or calls ``on_interrupt``);
        the third one quits hermes."""
        interrupt = on_interrupt or self._interrupt
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                box["result"] = fn()
            except BaseException as exc:  # noqa: BLE001 - shown to the user by the caller
                box["error"] = exc

        t = threading.Thread(target=work, name="hermes-turn", daemon=True)
        presses = [0]
        in_prompt = [False]

        def on_sigint(signum: int, frame: Any) -> None:
            # A handler instead of KeyboardInterrupt: the exception could land anywhere in this loop
            # (even inside the except clause); a counter cannot be lost.
            presses[0] += 1
            if presses[0] >= 3 or in_prompt[0]:
                raise KeyboardInterrupt
            interrupt()

        old = None
        if threading.current_thread() is threading.main_thread():
            old = signal.signal(signal.SIGINT, on_sigint)
        t.start()
        told = 0
        try:
            while t.is_alive():
                if presses[0] != told:
                    told = presses[0]
                    self.r.warn("Interrupting… (the conversation is kept)" if told == 1
                                else "Still stopping the current step… "
                                     "(Ctrl+C once more quits hermes)")
                try:
                    req = self._approvals.get(timeout=0.05)
                except queue.Empty:
                    continue
                in_prompt[0] = True
                try:
                    self._serve(req)  # answered "deny" when Ctrl+C lands in the prompt
                except KeyboardInterrupt:  # the handler counted the press
                    if presses[0] >= 3:
                        raise
                    self._interrupt()
                finally:
                    in_prompt[0] = False
        finally:
            if old is not None:
                signal.signal(signal.SIGINT, old)
        t.join()
        return box.get("result"), box.get("error"), presses[0] > 0

    def _interrupt(self) -> None:
        fn = getattr(self.agent, "interrupt", None)
        if callable(fn):
            try:
                fn("interrupted by the user")
            except TypeError:
                fn()

    # ---- input ----------------------------------------------------------------------------
    def handle_line(self, line: str) -> bool:
        """One line from the user; False means leave the REPL."""
        if not line.strip():
            return True
        parsed = slash.parse(line)
        if parsed is None:
            self.send(slash.unescape(line).strip("\n"))
            return True
        if not parsed.name:
            return self.cmd_help("")
        cmd = parsed.command
        if cmd is None:
            if not self.invoke_skill(line):
                skills = [n for n, _ in self.skill_entries()]
                self.r.warn(slash.unknown_message(parsed.name, skills))
            return True
        try:
            return getattr(self, "cmd_" + cmd.name)(parsed.arg) is not False
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001 - a failed command must not end the chat
            self.report(exc, f"/{cmd.name} failed")
            return True

    def report(self, exc: BaseException, what: str = "error") -> None:
        if self.debug:
            traceback.print_exception(exc)
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        self.r.error(f"{what}: {msg}")

    def send(self, text: str) -> Optional[dict]:
        """Run one turn and show its outcome; then the skill review may start in the background."""
        self.turns += 1
        self.r.begin_turn()
        res, err, interrupted = self.run_in_worker(
            lambda: self.agent.run_conversation(self.attach(text), stream_callback=self.r.on_delta))
        self.show_result(res, err, interrupted)
        if err is None and res:
            from agent import skill_review as review

            review.after_turn(self.agent, res, self._notice)
        return res

    # ---- skills ---------------------------------------------------------------------------
    def skill_entries(self, max_age: float = 3.0) -> list[tuple[str, str]]:
        """(name, one-line description) of the skills `/<name>` invokes; re-read at most every
        ``max_age`` seconds (completion asks on every key press)."""
        from hermes_core.config import hermes_home
        from tools.skills import format as fmt
        from tools.skills.bundled import catalog

        stamp, entries = self._skills_seen
        if time.monotonic() - stamp < max_age:
            return entries
        try:
            cat = catalog(hermes_home(), getattr(self.agent, "config", None))
        except Exception:  # noqa: BLE001 - a broken skills folder must not break the prompt
            return []
        entries = [(s.name, fmt.one_line(s.description, 70)) for s in cat.skills]
        self._skills_seen = (time.monotonic(), entries)
        return entries

    def invoke_skill(self, line: str) -> bool:
        """`/<skill> [text]`: send the message with the skill attached; False when no skill
        matches."""
        from hermes_core.config import hermes_home
        from tools.skills import invoke

        hit = invoke.expand(line, hermes_home(), getattr(self.agent, "config", None))
        if hit is None:
            return False
        self.r.info(f"Using skill {hit[0].name}.", "dim")
        self.send(hit[1])
        return True

    def show_result(self, res: Optional[dict], err: Optional[BaseException],
                    interrupted: bool) -> None:
        if err is not None:
            self.r.end_turn(None)
            self.report(err)
            return
        res = res or {}
        final = res.get("final_response")
        if res.get("interrupted") or (interrupted and not res.get("completed")):
            self.r.end_turn(None)
            self.r.warn("Interrupted. The conversation is kept; send your next message.")
        elif res.get("compression_deferred"):
            self.r.end_turn(None)
            self.r.warn(str(final or res.get("error")
                            or "Compression is running elsewhere; try again."))
        elif res.get("failed"):
            self.r.end_turn(None)
            self.r.error(str(res.get("error") or final or "the turn failed"))
        elif not final and not self.r.streamed:
            self.r.end_turn(None)
            self.r.warn(f"No answer (stopped after {res.get('api_calls', '?')} model calls). "
                        "Try again, or raise --max-turns.")
        else:
            self.r.end_turn(final)


# ---- the terminal loop ------------------------------------------------------------------------
def banner(agent: Any, notice: Optional[str]) -> list[str]:
    lines = [f"Hermes · model {getattr(agent, 'model', '?')} "
             f"· session {getattr(agent, 'session_id', '?')}",
             "Type a message (Enter sends, Alt+Enter for a new line), /help for commands, "
             "Ctrl+D to quit."]
    if notice:
        lines.append(notice)
    return lines


def _show_notice(holder: dict, r: Renderer, line: str) -> None:
    """A line from a background thread (the skill review): above the prompt while it is shown."""
    app = getattr(holder.get("prompt"), "app", None)
    loop = getattr(app, "loop", None)
    if app is not None and app.is_running and loop is not None:
        from prompt_toolkit.application import run_in_terminal

        loop.call_soon_threadsafe(lambda: run_in_terminal(lambda: r.info(line, "green")))
    else:
        r.info(line, "green")


def _finish_reviews(r: Renderer, timeout: float = 120.0) -> None:
    """Leaving the chat: let a running skill review finish (Ctrl+C skips it)."""
    from agent import skill_review as review

    if review.wait(0):
        return
    r.info("Finishing the skill review of this session… (Ctrl+C skips it)", "dim")
    try:
        if not review.wait(timeout):
            r.warn("The skill review did not finish in time; nothing of it was saved half-way.")
    except KeyboardInterrupt:
        pass


def run_repl(args: Any, cfg: Any) -> int:
    """`hermes` / `hermes chat` on a terminal."""
    from hermes_core.home import ensure_home
    from tools.mcp.manager import shutdown_servers, start_servers
    from agent.callbacks import AgentHooks
    from hermes_cli.agent_factory import (build_agent, local_notice, open_db, provider_settings,
                                          resolve_session_arg)

    home = ensure_home()  # 0700: transcripts, keys and the prompt history live here
    r = Renderer()
    # MCP servers connect in the background; the first turn of a session waits for the ones
    # still connecting (up to their connect_timeout), later news is printed between prompts
    mcp_news: "queue.SimpleQueue[tuple[str, str]]" = queue.SimpleQueue()
    mcp = start_servers(cfg, report=lambda kind, line: mcp_news.put((kind, line)))
    db = open_db(cfg)
    session_id = resolve_session_arg(args, db)
    holder: dict[str, Any] = {}

    def factory(sid: Optional[str]) -> Any:
        chat = holder.get("chat")
        hooks = AgentHooks(tool_progress=r.on_tool, status=r.on_status,
                           approval=lambda c, why: holder["chat"].approval_callback(c, why))
        return build_agent(args, cfg, session_db=db, session_id=sid,
                           yolo=chat.yolo if chat else bool(args.yolo), hooks=hooks)

    chat = ChatSession(factory, r, session_id=session_id, db=db, yolo=bool(args.yolo),
                       debug=bool(args.debug), notice=lambda line: _show_notice(holder, r, line))
    holder["chat"] = chat
    chat.queue_images(getattr(args, "images", None) or [])  # --image: on the first message
    for line in banner(chat.agent, local_notice(provider_settings(args, cfg))):
        style = ("dim" if line.startswith("Type") else
                 "yellow" if line.startswith("No model") else "bold")
        r.info(line, style)
    if session_id:
        chat.show_resumed(session_id)
    starting = [name for name, conn in (mcp.connections.items() if mcp else ())
                if conn.cfg.enabled]
    if starting:
        r.info(f"MCP: connecting {', '.join(starting)} in the background (/mcp shows them).", "dim")

    arm = QuitArm(lambda: r.info("(Ctrl+C again to quit, or Ctrl+D)", "dim"))
    ps = holder["prompt"] = prompt_session(str(home / ".hermes_history"), arm, chat.skill_entries)
    try:
        _prompt_loop(r, ps, chat, mcp_news, arm)
    finally:
        _finish_reviews(r)
        _goodbye(r, chat.agent)
        shutdown_servers()
    return 0


def _prompt_loop(r: Renderer, ps: Any, chat: Any,
                 news: "queue.SimpleQueue[tuple[str, str]]", arm: QuitArm) -> None:
    """Read and handle lines until /quit, Ctrl+D, or two Ctrl+C in a row at an empty prompt (the
    prompt handles those, ``QuitArm``; one here came as a signal between two prompts)."""
    while True:
        try:  # inside the try: a Ctrl+C while the news prints counts as one at the prompt
            _print_news(r, news)
            text = ps.prompt("❯ ")
        except KeyboardInterrupt:
            if arm.armed:
                return
            arm.armed = True
            try:  # the terminal is cooked until the prompt is back: a 2nd Ctrl+C lands here
                arm.hint()
            except KeyboardInterrupt:
                return
            continue
        except EOFError:  # Ctrl+D, or the second Ctrl+C at the prompt
            return
        arm.armed = False
        try:
            if not chat.handle_line(text):
                return
        except KeyboardInterrupt:
            r.warn("Quitting.")
            return


def _goodbye(r: Renderer, agent: Any) -> None:
    """Say how to continue the session, then close the agent (its child processes, browser)."""
    sid = getattr(agent, "session_id", None)
    if sid and getattr(agent, "messages", None):
        r.info(f"Session {sid} saved; continue it with `hermes -c` or `hermes -r {sid}`.", "dim")
    close = getattr(agent, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # noqa: BLE001 - leaving must not fail on a close
            pass


def _print_news(r: Renderer, news: "queue.SimpleQueue[tuple[str, str]]") -> None:
    """Lines other threads queued (MCP servers connecting or failing), shown between prompts."""
    while not news.empty():
        kind, line = news.get()
        if kind == "info":
            r.info(line, "dim")
        else:
            r.warn(line)
