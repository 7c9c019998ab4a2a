"""AIAgent's session room: its history and the rows behind it (``agent.persistence`` does the
work), undo, usage figures and the trajectory file."""
from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Optional

from agent.callbacks import StatusKind
from agent.persistence import HistoryLoadError, StoreError
from hermes_core.config import hermes_home
from hermes_core.messages import content_text, find_tool_pair_violations, sanitize_tool_pairs
from hermes_core.tokens import estimate_messages_tokens_rough

if TYPE_CHECKING:  # pragma: no cover
    from agent.persistence import SessionRecorder
    from agent.prompt_builder import BuiltPrompt
    from hermes_core.config import HermesConfig


def new_session_id() -> str:
    return time.strftime("%Y%m%d_%H%M%S") + "_" + os.urandom(3).hex()


class SessionMixin:
    config: HermesConfig
    model: str
    messages: list[dict]
    context_compressor: Any
    usage_baseline: Optional[tuple[int, int]]
    compactions: int
    session_prompt_tokens: int
    session_completion_tokens: int
    session_api_calls: int
    _recorder: SessionRecorder
    _history_loaded: bool
    _cached_system_prompt: Optional[str]
    _prompt: Optional[BuiltPrompt]
    _all_tools: list[dict]
    _tools_frozen: bool

    if TYPE_CHECKING:  # pragma: no cover - provided by the other rooms
        def emit_status(self, kind: StatusKind, message: str) -> None: ...
        def _fit_tools_to(self, system_prompt: str) -> None: ...
        def _offer_tools(self, tools: list[dict]) -> None: ...

    @property
    def session_id(self) -> str:
        return self._recorder.session_id

    @property
    def session_db(self) -> Any:
        return self._recorder.db

    @property
    def store_position(self) -> Optional[int]:
        """The highest store row id of this agent's live history (None: nothing stored): a
        gateway worker compares it with the store's next time, to notice another worker's
        turns."""
        return self._recorder.top_row_id

    @property
    def lease_lost(self) -> Optional[str]:
        """Why this agent's writes were refused (its turn lease was lost), else None."""
        return self._recorder.fenced

    def _open_store(self) -> Any:
        """The configured store, for an agent given no ``session_db``."""
        from hermes_state import SessionDB

        return SessionDB.from_config(self.config)

    def history(self) -> list[dict]:
        """The live history; a resumed session's is read from the store on first use
        (``messages`` stays empty until then). Raises HistoryLoadError when the store cannot be
        read (the next call tries again)."""
        if self._history_loaded:
            return self.messages
        messages, stored_prompt = self._recorder.load()
        if find_tool_pair_violations(messages):
            messages = self._repair_tool_pairs(messages)
        self.messages, self._history_loaded = messages, True
        if stored_prompt and self._cached_system_prompt is None:
            self._cached_system_prompt = stored_prompt  # byte-identical across processes
            self._fit_tools_to(stored_prompt)
        return self.messages

    def start_empty(self) -> None:
        """The caller made this session's row just now and nothing else wrote to it: the first
        turn need not read the store (a new gateway session saves its reads this way)."""
        if not self._history_loaded:
            self._recorder.created()
            self.messages, self._history_loaded = [], True

    def _repair_tool_pairs(self, messages: list[dict]) -> list[dict]:
        """A run that died between a tool call and its result: answer the call with a stub so
        the provider accepts the history again (the original rows stay in the store, inactive)."""
        repaired = sanitize_tool_pairs(messages)
        try:
            self._recorder.replace(messages, repaired)
        except StoreError as exc:
            raise HistoryLoadError(
                f"Session {self.session_id} has tool calls left unanswered by an interrupted "
                f"run, and the store refused the repair ({exc}). Run `hermes doctor`, then try "
                "again.") from exc
        self.emit_status(StatusKind.INFO,
                         "Repaired tool calls left unanswered by an interrupted run.")
        return repaired

    def adopt_history(self, messages: list[dict]) -> None:
        """A caller-supplied history is the caller's to store; only what this turn adds is
        written."""
        self._history_loaded = True
        self._recorder.adopt(len(messages))

    def _persist_session(self, messages: list[dict]) -> None:
        """Write the messages not yet in the store, one row each (a crash loses at most the call
        in flight)."""
        self._recorder.persist(messages)

    def _persist_ahead(self, messages: list[dict]) -> None:
        """``_persist_session``, the write overlapping the model request that follows
        (``SessionRecorder.persist_ahead``); ``_settle_store`` waits for it."""
        self._recorder.persist_ahead(messages)

    def _settle_store(self) -> None:
        """Every write of this turn is in the store (or was reported as failed)."""
        self._recorder.settle()

    def commit_compaction(self, old: list[dict], new: list[dict],
                          lock_holder: Optional[str] = None) -> None:
        """Persist a compaction in place: old rows become inactive (still searchable), new rows
        active. With ``lock_holder`` the commit happens only if that holder still holds the
        compression lock."""
        self._recorder.replace(old, new, lock_holder=lock_holder)
        self.usage_baseline = None
        self.compactions += 1

    def _save_trajectory(self, messages: list[dict], user_message: str, completed: bool) -> None:
        from agent.trajectory import save_trajectory

        try:
            save_trajectory(hermes_home(), messages, self._cached_system_prompt, self.model,
                            completed, self.session_id)
        except OSError as exc:
            self.emit_status(StatusKind.WARNING, f"Could not save the trajectory: {exc}")

    def _is_new_session(self) -> bool:
        """No turn of this session has run yet (in this process or, resumed, before it)."""
        return self._history_loaded and not self.messages and self._cached_system_prompt is None

    def new_session(self) -> str:
        """Start a fresh session; the old one is ended and stays in the store."""
        self._recorder.end("new_session")
        self._recorder.start(new_session_id())
        self.messages = []
        self._history_loaded = True
        self._cached_system_prompt = None
        self._prompt = None
        self._offer_tools(self._all_tools)
        self._tools_frozen = False  # the next session may see tools that registered since
        self.usage_baseline = None
        self.compactions = 0
        self.session_prompt_tokens = self.session_completion_tokens = self.session_api_calls = 0
        self.session_cache_read_tokens = 0
        return self.session_id

    def undo_last_turn(self) -> Optional[str]:
        """Drop this agent's last user message and what followed it; returns its text (for
        ``/retry``).

        Only those messages' rows become inactive (by id; they stay in the store): rows another
        process appended meanwhile stay live. A compaction summary is never undone: a turn that
        was folded into one is past undoing (None, like an empty history)."""
        from agent.context_compressor import last_compaction_index

        messages = self.history()
        floor = last_compaction_index(messages) + 1
        idx = next((i for i in range(len(messages) - 1, floor - 1, -1)
                    if messages[i].get("role") == "user"), None)
        if idx is None:
            return None
        removed = content_text(messages[idx].get("content"))
        self._recorder.truncate(messages, idx)
        self.messages = messages[:idx]
        self.usage_baseline = None
        return removed

    def usage(self) -> dict:
        window = getattr(self.context_compressor, "context_length", 0) or 0
        baseline = self.usage_baseline
        if baseline is not None and baseline[1] <= len(self.messages):
            ctx_tokens = baseline[0] + estimate_messages_tokens_rough(self.messages[baseline[1]:])
        else:
            ctx_tokens = estimate_messages_tokens_rough(self.messages)
        prompt, completion = self.session_prompt_tokens, self.session_completion_tokens
        return {"prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion, "api_calls": self.session_api_calls,
                "context_length": window, "context_tokens": ctx_tokens,
                "context_fill": (ctx_tokens / window) if window else 0.0,
                "compactions": self.compactions, "model": self.model,
                "session_id": self.session_id}
