"""The REPL's slash commands (`/new`, `/usage`, `/undo`, `/cron`, ...), one ``cmd_<name>`` each.

A mixin of `hermes_cli.chat.ChatSession`, kept apart so the session's turn and approval machinery
reads on its own. A command returns False only to end the chat (`/quit`). It uses the session's
public surface: ``r`` (the Renderer), ``agent``, ``agent_factory``, ``db``, ``turns``, ``yolo``,
``send``, ``run_in_worker``, ``report`` and ``skill_entries``.
"""
from __future__ import annotations

import threading
from typing import Any, Optional

from hermes_cli import slash


class SlashCommands:
    def cmd_help(self, arg: str) -> bool:
        import shutil

        self.r.info("Commands:")
        width = shutil.get_terminal_size((100, 24)).columns
        for line in slash.help_lines(self.skill_entries(max_age=0), width=width):
            self.r.info(line)
        return True

    def cmd_quit(self, arg: str) -> bool:
        return False

    # ---- images for the next message (`/image PATH`, `hermes chat --image PATH`) -------------
    def queue_images(self, paths: list[str]) -> None:
        from hermes_cli.attachments import check_provider, read_image

        if paths:
            check_provider(str(getattr(self.agent, "provider", "")))
        pending = self.__dict__.setdefault("pending_images", [])
        for path in paths:
            pending.append(read_image(path))
            self.r.info(f"Attached {path} to your next message ({len(pending)} image"
                        f"{'s' if len(pending) > 1 else ''}).", "dim")

    def attach(self, text: str) -> Any:
        """The message to send: ``text`` with the queued images (then the queue is empty)."""
        from hermes_cli.attachments import with_images

        images, self.__dict__["pending_images"] = self.__dict__.get("pending_images", []), []
        return with_images(text, images)

    def cmd_image(self, arg: str) -> bool:
        if not arg.strip():
            self.r.warn("usage: /image <path>  (attaches the image to your next message)")
            return True
        try:
            self.queue_images([arg.strip().strip("'\"")])
        except ValueError as exc:
            self.r.error(str(exc))
        return True

    def cmd_new(self, arg: str) -> bool:
        fn = getattr(self.agent, "new_session", None)
        if callable(fn):
            sid = fn()
        else:
            self.agent = self.agent_factory(None)
            sid = getattr(self.agent, "session_id", None)
        self.r.info(f"New session {sid or getattr(self.agent, 'session_id', '')}. "
                    "The previous one is kept (`/sessions`).")
        return True

    def cmd_model(self, arg: str) -> bool:
        """``/model``: the endpoint's models (* the current one); ``/model NAME`` switches."""
        from agent.providers import model_choice

        current = getattr(self.agent, "model", "?")
        if not arg:
            settings = getattr(self.agent, "_provider_settings", None)
            found = model_choice.endpoint_models(settings) if settings is not None else None
            self.r.info(f"Model: {current}")
            for line in model_choice.list_lines(found, current) if found is not None else ():
                self.r.info(line)
            return True
        if hasattr(self.agent, "_provider_settings"):
            window = model_choice.switch_model(self.agent, arg)
            self.r.info(f"Model set to {arg} for the rest of this session ({window:,}-token "
                        "window; `hermes model NAME` saves it).")
        else:
            self.agent.model = arg
            self.r.info(f"Model set to {arg} for the rest of this session.")
        return True

    def cmd_compress(self, arg: str) -> bool:
        self.r.spinner_start("compressing")
        res, err, _ = self.run_in_worker(lambda: self.agent.compress(arg or None))
        self.r.spinner_stop()
        if err is not None:
            self.report(err, "compression failed")
            return True
        res = res or {}
        before, after = res.get("before_tokens"), res.get("after_tokens")
        sizes = (f" ({before} → {after} tokens)" if before is not None and after is not None
                 and res.get("compressed") else "")
        msg = res.get("message") or ("Compressed." if res.get("compressed")
                                     else "Nothing to compress.")
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
        self.r.info(f"Context: {u.get('context_tokens', 0)} / "
                    f"{u.get('context_length', '?')} tokens "
                    f"({pct} full)")
        breakdown = getattr(self.agent, "prompt_breakdown", None)
        if callable(breakdown):
            from agent.prompt_builder import breakdown_lines

            self.r.info("Fixed prompt sent with every request (system prompt + tool schemas):")
            for line in breakdown_lines([row for row in breakdown() if row[1]]):
                self.r.info(line, "dim")
        self.r.info(f"Compactions: {u.get('compactions', 0)}")
        return True

    def _history(self) -> list[dict]:
        """The agent's history, read from the store first for a resumed session."""
        fn = getattr(self.agent, "history", None)
        return list(fn() if callable(fn) else getattr(self.agent, "messages", None) or [])

    def _show_message(self, m: dict, limit: int = 300) -> bool:
        """A user/assistant message as `you: …` / `hermes: …` (tool calls below); else False."""
        from hermes_cli.sessions import content_text, tool_calls_text

        role = m.get("role")
        if role not in ("user", "assistant"):
            return False
        text = " ".join(content_text(m.get("content")).split())
        if len(text) > limit:
            text = text[:limit - 1] + "…"
        if text:
            self.r.info(f"{'you' if role == 'user' else 'hermes'}: {text}",
                        "bold" if role == "user" else None)
        for c in tool_calls_text(m.get("tool_calls")):
            self.r.info(f"    → {c[:120]}", "dim")
        return True

    def cmd_history(self, arg: str) -> bool:
        shown = sum(self._show_message(m) for m in self._history())
        if not shown:
            self.r.info("No messages yet in this session.")
        return True

    def show_resumed(self, sid: str) -> None:
        """What a resumed session holds: its true message count and its last exchange."""
        msgs = self._history()
        row = (self.db.get_session(sid) if self.db is not None else None) or {}
        title = f" ({row['title']})" if row.get("title") else ""
        self.r.info(f"Resumed session {sid}{title} with {len(msgs)} messages"
                    + (". Last exchange:" if msgs else "."), "dim")
        last_user = max((i for i, m in enumerate(msgs) if m.get("role") == "user"), default=None)
        for m in msgs[last_user:] if last_user is not None else []:
            self._show_message(m, limit=160)
        if msgs:
            self.r.info("/history shows the whole conversation.", "dim")

    def _undo(self) -> Optional[str]:
        """The agent's undo: the text of the message it took back (never a compaction
        summary), or None."""
        fn = getattr(self.agent, "undo_last_turn", None)
        if not callable(fn):
            self.r.warn("Undo is not supported by this agent build.")
            return None
        return fn()

    def cmd_undo(self, arg: str) -> bool:
        removed = self._undo()
        if removed is not None:
            self.r.info("Removed your last message and its answer: "
                        f"{' '.join(removed.split())[:80]}")
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
            self.r.info(f"Title: {title}" if title
                        else "This session has no title; set one with /title NAME.")
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
        self.agent = self.agent_factory(sid)
        close = getattr(old, "close", None)
        if callable(close) and old is not self.agent:
            try:
                close()
            except Exception:  # noqa: BLE001
                pass
        self.show_resumed(sid)
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
        from tools.mcp.manager import get_manager
        from hermes_cli.mcp_cmd import mcp_status_rows, status_lines

        rows = mcp_status_rows(get_manager())
        if not rows:
            self.r.info("No MCP servers configured; "
                        "add one with `hermes mcp add NAME --command CMD` "
                        "(or --url URL), then restart hermes.")
            return True
        for line in status_lines(rows):
            self.r.info(line)
        offered = {d.get("function", {}).get("name")
                   for d in getattr(self.agent, "tools", None) or []
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
            from hermes_core.config import load_config

            cfg = load_config()
        return cfg

    def _cron_run(self, job: dict) -> str:
        """/cron run: in the foreground, Ctrl+C stops it; the answer is shown here too."""
        from cron.scheduler import run_once

        cancel = threading.Event()
        self.r.spinner_start(f"running job {job['id']}")
        res, err, _ = self.run_in_worker(
            lambda: run_once(self.db, self._config(), job, cancel=cancel),
            on_interrupt=cancel.set)
        self.r.spinner_stop()
        if err is not None:
            return f"The run failed: {type(err).__name__}: {err}"
        head = res.answer if res.answer is not None else f"The run ended {res.status}: {res.error}"
        return f"{head}\n(job {job['id']}: {res.status}; output {res.output_path})"

    def cmd_ps(self, arg: str) -> bool:
        from hermes_cli.checkpoints_cmd import ps_lines

        for line in ps_lines(getattr(self.agent, "session_id", None)):
            self.r.info(line)
        return True

    def cmd_rollback(self, arg: str) -> bool:
        from pathlib import Path

        from hermes_cli.checkpoints_cmd import rollback

        rollback(Path(getattr(self.agent, "cwd", ".")), self._config(), arg, self.r.info,
                 lambda question, why: self._ask(question, why) in ("once", "always"))
        return True

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
