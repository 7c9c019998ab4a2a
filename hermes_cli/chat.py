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
from hermes_cli.approval_prompt import approval_timeout, ask_approval_tty
from hermes_cli.render import Renderer


@dataclass
class _ApprovalRequest:
    command: str
    reason: str
    answer: str = "deny"
    done: threading.Event = field(default_factory=threading.Event)


class ChatSession:
    """Slash commands and turns over one AIAgent; callable without a terminal."""

    def __init__(self, agent_factory: Callable[[Optional[str]], Any], renderer: Renderer, *,
                 session_id: Optional[str] = None, db: Any = None, yolo: bool = False,
                 ask_approval: Optional[Callable[[str, str], str]] = None,
                 debug: bool = False, notice: Optional[Callable[[str], None]] = None) -> None:
        self.r = renderer
        self.yolo = yolo
        self.debug = debug
        self._factory = agent_factory
        self._db = db
        self._ask = ask_approval or (lambda c, why: ask_approval_tty(self.r, c, why))
        self._approvals: "queue.Queue[_ApprovalRequest]" = queue.Queue()
        self._notice = notice or (lambda line: self.r.info(line, "green"))  # the skill review's line
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
                                else "Still stopping the current step… (Ctrl+C once more quits hermes)")
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
                self.r.warn(slash.unknown_message(parsed.name))
            return True
        try:
            return getattr(self, "cmd_" + cmd.name)(parsed.arg) is not False
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001 - a failed command must not end the chat
            self._report(exc, f"/{cmd.name} failed")
            return True

    def _report(self, exc: BaseException, what: str = "error") -> None:
        if self.debug:
            traceback.print_exception(exc)
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        self.r.error(f"{what}: {msg}")

    def send(self, text: str) -> Optional[dict]:
        """Run one turn and show its outcome; then the skill review may start in the background."""
        self.turns += 1
        self.r.begin_turn()
        res, err, interrupted = self.run_in_worker(
            lambda: self.agent.run_conversation(text, stream_callback=self.r.on_delta))
        self.show_result(res, err, interrupted)
        if err is None and res:
            from agent.skills import review

            review.after_turn(self.agent, res, self._notice)
        return res

    # ---- skills ---------------------------------------------------------------------------
    def skill_entries(self, max_age: float = 3.0) -> list[tuple[str, str]]:
        """(name, one-line description) of the skills `/<name>` invokes; re-read at most every
        ``max_age`` seconds (completion asks on every key press)."""
        from agent.config import hermes_home
        from agent.skills import format as fmt
        from agent.skills.bundled import catalog

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
        """`/<skill> [text]`: send the message with the skill attached; False when no skill matches."""
        from agent.config import hermes_home
        from agent.skills import invoke

        hit = invoke.expand(line, hermes_home(), getattr(self.agent, "config", None))
        if hit is None:
            return False
        self.r.info(f"Using skill {hit[0].name}.", "dim")
        self.send(hit[1])
        return True

    def show_result(self, res: Optional[dict], err: Optional[BaseException], interrupted: bool) -> None:
        if err is not None:
            self.r.end_turn(None)
            self._report(err)
            return
        res = res or {}
        final = res.get("final_response")
        if res.get("interrupted") or (interrupted and not res.get("completed")):
            self.r.end_turn(None)
            self.r.warn("Interrupted. The conversation is kept; send your next message.")
        elif res.get("compression_deferred"):
            self.r.end_turn(None)
            self.r.warn(str(final or res.get("error") or "Compression is running elsewhere; try again."))
        elif res.get("failed"):
            self.r.end_turn(None)
            self.r.error(str(res.get("error") or final or "the turn failed"))
        elif not final and not self.r.streamed:
            self.r.end_turn(None)
            self.r.warn(f"No answer (stopped after {res.get('api_calls', '?')} model calls). "
                        "Try again, or raise --max-turns.")
        else:
            self.r.end_turn(final)

    # ---- slash commands ------------------------------------------------------------------
    def cmd_help(self, arg: str) -> bool:
        self.r.info("Commands:")
        for line in slash.help_lines(self.skill_entries(max_age=0)):
            self.r.info(line)
        return True

    def cmd_quit(self, arg: str) -> bool:
        return False

    def cmd_new(self, arg: str) -> bool:
        fn = getattr(self.agent, "new_session", None)
        if callable(fn):
            sid = fn()
        else:
            self.agent = self._factory(None)
            sid = getattr(self.agent, "session_id", None)
        self.r.info(f"New session {sid or getattr(self.agent, 'session_id', '')}. The previous one is kept (`/sessions`).")
        return True

    def cmd_model(self, arg: str) -> bool:
        if not arg:
            self.r.info(f"Model: {getattr(self.agent, 'model', '?')}")
            return True
        self.agent.model = arg
        self.r.info(f"Model set to {arg} for the rest of this session.")
        return True

    def cmd_compress(self, arg: str) -> bool:
        self.r.spinner_start("compressing")
        res, err, _ = self.run_in_worker(lambda: self.agent.compress(arg or None))
        self.r.spinner_stop()
        if err is not None:
            self._report(err, "compression failed")
            return True
        res = res or {}
        before, after = res.get("before_tokens"), res.get("after_tokens")
        sizes = f" ({before} → {after} tokens)" if before is not None and after is not None else ""
        msg = res.get("message") or ("Compressed." if res.get("compressed") else "Nothing to compress.")
        if res.get("deferred") or not res.get("compressed"):
            self.r.warn(f"{msg}{sizes}")
        else:
            self.r.info(f"{msg}{sizes}", "green")
        return True

    def cmd_usage(self, arg: str) -> bool:
        u = self.agent.usage() or {}
        fill = u.get("context_fill")
        pct = f"{100 * float(fill):.1f}%" if isinstance(fill, (int, float)) else "?"
        self.r.info(f"Tokens this session: {u.get('prompt_tokens', 0)} prompt + "
                    f"{u.get('completion_tokens', 0)} completion = {u.get('total_tokens', 0)} "
                    f"over {u.get('api_calls', 0)} model calls")
        self.r.info(f"Context: {u.get('context_tokens', 0)} / {u.get('context_length', '?')} tokens "
                    f"({pct} full)")
        breakdown = getattr(self.agent, "prompt_breakdown", None)
        if callable(breakdown):
            from agent.prompt_builder import breakdown_lines

            self.r.info("Fixed prompt sent with every request (system prompt + tool schemas):")
            for line in breakdown_lines([row for row in breakdown() if row[1]]):
                self.r.info(line, "dim")
        self.r.info(f"Compactions: {u.get('compactions', 0)}")
        return True

    def cmd_history(self, arg: str) -> bool:
        msgs = list(getattr(self.agent, "messages", None) or [])
        shown = 0
        for m in msgs:
            role = m.get("role")
            if role not in ("user", "assistant"):
                continue
            from hermes_cli.sessions import content_text, tool_calls_text

            text = " ".join(content_text(m.get("content")).split())
            if len(text) > 300:
                text = text[:299] + "…"
            calls = tool_calls_text(m.get("tool_calls"))
            who = "you" if role == "user" else "hermes"
            if text:
                self.r.info(f"{who}: {text}", "bold" if role == "user" else None)
            for c in calls:
                self.r.info(f"    → {c[:120]}", "dim")
            shown += 1
        if not shown:
            self.r.info("No messages yet in this session.")
        return True

    def _undo(self) -> Optional[str]:
        """The agent's undo: the text of the message it took back (never a compaction summary), or None."""
        fn = getattr(self.agent, "undo_last_turn", None)
        if not callable(fn):
            self.r.warn("Undo is not supported by this agent build.")
            return None
        return fn()

    def cmd_undo(self, arg: str) -> bool:
        removed = self._undo()
        if removed is not None:
            self.r.info(f"Removed your last message and its answer: {' '.join(removed.split())[:80]}")
        else:
            self.r.info("Nothing to undo.")
        return True

    def cmd_retry(self, arg: str) -> bool:
        removed = self._undo()
        if removed is None:
            self.r.info("Nothing to retry yet.")
            return True
        self.r.info(f"Retrying: {' '.join(removed.split())[:80]}", "dim")
        self.send(removed)
        return True

    def _ensure_stored(self) -> Any:
        db = self.db
        sid = getattr(self.agent, "session_id", None)
        if db is None or not sid:
            raise RuntimeError("this agent has no session store")
        if db.get_session(sid) is None:
            db.create_session(sid, source="cli", model=getattr(self.agent, "model", None))
        return db

    def cmd_title(self, arg: str) -> bool:
        db = self._ensure_stored()
        sid = self.agent.session_id
        if not arg:
            title = (db.get_session(sid) or {}).get("title")
            self.r.info(f"Title: {title}" if title else "This session has no title; set one with /title NAME.")
            return True
        try:
            db.set_session_title(sid, arg)
        except ValueError as exc:
            self.r.error(str(exc))
            return True
        self.r.info(f"Session {sid} titled {arg!r}; resume it later with `hermes -r {arg!r}`.")
        return True

    def cmd_sessions(self, arg: str) -> bool:
        from hermes_cli.sessions import session_list_lines

        db = self.db
        if db is None:
            raise RuntimeError("this agent has no session store")
        rows = db.list_sessions(limit=15)
        current = getattr(self.agent, "session_id", None)
        lines = session_list_lines(rows)
        for line in lines:
            mark = "*" if current and line.startswith(current) else " "
            self.r.info(mark + line)
        if rows:
            self.r.info("Resume one with /resume ID or /resume TITLE.", "dim")
        return True

    def cmd_resume(self, arg: str) -> bool:
        if not arg:
            self.r.warn("Usage: /resume <id|title>; /sessions lists them.")
            return True
        db = self.db
        sid = db.resolve_session(arg) if db is not None else None
        if not sid:
            self.r.error(f"No session matches {arg!r}; /sessions lists ids and titles.")
            return True
        old = self.agent
        self.agent = self._factory(sid)
        close = getattr(old, "close", None)
        if callable(close) and old is not self.agent:
            try:
                close()
            except Exception:  # noqa: BLE001
                pass
        n = len(getattr(self.agent, "messages", None) or [])
        title = (db.get_session(sid) or {}).get("title")
        self.r.info(f"Resumed {sid}" + (f" ({title})" if title else "") + f", {n} messages. /history shows them.")
        return True

    def cmd_tools(self, arg: str) -> bool:
        from tools.registry import check_toolset_requirements, toolset_tools

        built = self.agent.fixed_prompt()
        offered = {t["function"]["name"] for t in built.tools}
        unavailable = check_toolset_requirements()
        for ts, names in toolset_tools().items():
            on = [n for n in names if n in offered]
            if on:
                self.r.info(f"  {ts:<16} {', '.join(on)}")
            else:
                why = unavailable.get(ts) or ("left out to fit the context window"
                                              if ts in built.omitted_toolsets else "off")
                self.r.info(f"  {ts:<16} ({why}) {', '.join(names)}", "dim")
        self.r.info("Choose toolsets with `hermes -t a,b` or `toolsets:` in config.yaml.", "dim")
        return True

    def cmd_mcp(self, arg: str) -> bool:
        from agent.mcp.manager import get_manager
        from hermes_cli.mcp_cmd import mcp_status_rows, status_lines

        rows = mcp_status_rows(get_manager())
        if not rows:
            self.r.info("No MCP servers configured; add one with `hermes mcp add NAME --command CMD` "
                        "(or --url URL), then restart hermes.")
            return True
        for line in status_lines(rows):
            self.r.info(line)
        offered = {d.get("function", {}).get("name") for d in getattr(self.agent, "tools", None) or []
                   if isinstance(d, dict)}
        late = [r["name"] for r in rows if r["tool_names"] and not offered & set(r["tool_names"])]
        if late and self.turns:
            self.r.info(f"{', '.join(late)} connected after this session's tool list was fixed; "
                        "/new starts a session that has their tools.", "dim")
        return True

    def cmd_cron(self, arg: str) -> bool:
        from cron.commands import handle

        db = self.db
        if db is None:
            raise RuntimeError("this agent has no session store")
        for line in handle(db, arg, cfg=self._config(), run=self._cron_run).splitlines():
            self.r.info(line)
        return True

    def _config(self) -> Any:
        cfg = getattr(self.agent, "config", None)
        if cfg is None:
            from agent.config import load_config

            cfg = load_config()
        return cfg

    def _cron_run(self, job: dict) -> str:
        """/cron run: in the foreground, Ctrl+C stops it; the answer is shown here too."""
        from cron.scheduler import run_once

        cancel = threading.Event()
        self.r.spinner_start(f"running job {job['id']}")
        res, err, _ = self.run_in_worker(lambda: run_once(self.db, self._config(), job, cancel=cancel),
                                         on_interrupt=cancel.set)
        self.r.spinner_stop()
        if err is not None:
            return f"The run failed: {type(err).__name__}: {err}"
        head = res.answer if res.answer is not None else f"The run ended {res.status}: {res.error}"
        return f"{head}\n(job {job['id']}: {res.status}; output {res.output_path})"

    def cmd_yolo(self, arg: str) -> bool:
        self.yolo = not self.yolo
        if hasattr(self.agent, "yolo"):
            try:
                self.agent.yolo = self.yolo
            except AttributeError:
                pass
        self.r.warn("YOLO on: dangerous commands run without asking." if self.yolo
                    else "YOLO off: dangerous commands ask for approval again.")
        return True


# ---- the terminal loop ------------------------------------------------------------------------
def _prompt_session(history_path: str, skills: Callable[[], list[tuple[str, str]]] = list) -> Any:
    """prompt_toolkit session: Enter sends, Alt+Enter/Esc+Enter newline, slash completion (commands,
    then the skills ``skills()`` lists)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import Completer, Completion
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings

    class SlashCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any):  # type: ignore[override]
            text = document.text_before_cursor
            extra = skills() if text.startswith("/") and " " not in text else []
            for name, help_text in slash.completions(text, extra):
                yield Completion(name, start_position=-len(text), display_meta=help_text)

    kb = KeyBindings()

    @kb.add("enter", eager=True)
    def _send(event: Any) -> None:
        event.current_buffer.validate_and_handle()

    @kb.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    @kb.add("c-c")
    def _ctrl_c(event: Any) -> None:
        buf = event.current_buffer
        if buf.text:
            buf.reset()  # first clear what was typed; an empty prompt then counts toward quitting
        else:
            event.app.exit(exception=KeyboardInterrupt())

    return PromptSession(history=FileHistory(history_path), completer=SlashCompleter(),
                         complete_while_typing=True, key_bindings=kb, multiline=True, reserve_space_for_menu=4,
                         prompt_continuation=lambda width, line, wrap: "." * (width - 1) + " ")


def banner(agent: Any, notice: Optional[str]) -> list[str]:
    lines = [f"Hermes · model {getattr(agent, 'model', '?')} · session {getattr(agent, 'session_id', '?')}",
             "Type a message (Enter sends, Alt+Enter for a new line), /help for commands, Ctrl+D to quit."]
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
    from agent.skills import review

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
    from agent.home import ensure_home
    from agent.mcp.manager import shutdown_servers, start_servers
    from hermes_cli.agent_factory import build_agent, local_notice, open_db, provider_settings, resolve_session_arg

    home = ensure_home()  # 0700: transcripts, keys and the prompt history live here
    r = Renderer()
    # MCP servers connect in the background; the first turn of a session waits for the ones
    # still connecting (up to their connect_timeout), later news is printed between prompts
    mcp_news: "queue.SimpleQueue[tuple[str, str]]" = queue.SimpleQueue()
    mcp = start_servers(cfg, report=lambda kind, line: mcp_news.put((kind, line)))
    db = open_db()
    session_id = resolve_session_arg(args, db)
    holder: dict[str, Any] = {}

    def factory(sid: Optional[str]) -> Any:
        chat = holder.get("chat")
        return build_agent(args, cfg, session_db=db, session_id=sid,
                           yolo=chat.yolo if chat else bool(args.yolo),
                           tool_progress_callback=r.on_tool, status_callback=r.on_status,
                           approval_callback=lambda c, why: holder["chat"].approval_callback(c, why))

    chat = ChatSession(factory, r, session_id=session_id, db=db, yolo=bool(args.yolo),
                       debug=bool(args.debug), notice=lambda line: _show_notice(holder, r, line))
    holder["chat"] = chat
    for line in banner(chat.agent, local_notice(provider_settings(args, cfg))):
        r.info(line, "dim" if line.startswith("Type") else "yellow" if line.startswith("No model") else "bold")
    if session_id:
        r.info(f"Resumed session with {len(getattr(chat.agent, 'messages', None) or [])} messages.", "dim")
    starting = [name for name, conn in (mcp.connections.items() if mcp else ()) if conn.cfg.enabled]
    if starting:
        r.info(f"MCP: connecting {', '.join(starting)} in the background (/mcp shows them).", "dim")

    ps = holder["prompt"] = _prompt_session(str(home / ".hermes_history"), chat.skill_entries)
    armed = False  # a Ctrl+C at an empty prompt arms quitting; the next one quits
    try:
        while True:
            try:  # inside the try: a Ctrl+C while the news prints counts as one at the prompt
                _print_news(r, mcp_news)
                text = ps.prompt("❯ ")
            except KeyboardInterrupt:
                if armed:
                    break
                armed = True
                try:  # the terminal is cooked until the prompt is back: a 2nd Ctrl+C lands here
                    r.info("(Ctrl+C again to quit, or Ctrl+D)", "dim")
                except KeyboardInterrupt:
                    break
                continue
            except EOFError:
                break
            armed = False
            try:
                if not chat.handle_line(text):
                    break
            except KeyboardInterrupt:
                r.warn("Quitting.")
                break
    finally:
        _finish_reviews(r)
        sid = getattr(chat.agent, "session_id", None)
        if sid and getattr(chat.agent, "messages", None):
            r.info(f"Session {sid} saved; continue it with `hermes -c` or `hermes -r {sid}`.", "dim")
        close = getattr(chat.agent, "close", None)
        if callable(close):
            try:
                close()
            except Exception:  # noqa: BLE001
                pass
        shutdown_servers()
    return 0


def _print_news(r: Renderer, news: "queue.SimpleQueue[tuple[str, str]]") -> None:
    """Lines other threads queued (MCP servers connecting or failing), shown between prompts."""
    while not news.empty():
        kind, line = news.get()
        if kind == "info":
            r.info(line, "dim")
        else:
            r.warn(line)
