"""Host side of compression: the cross-process lock, the compressor call, the compaction commit.

The compressor (``agent.context_compressor``) is pure; this module owns the I/O around it:
taking the per-session lock in the session store (SPEC §5), refreshing its lease while a slow
summary runs, persisting the compaction in place, and raising the lock-skip signal the turn reads.
"""
from __future__ import annotations

import logging
import os
import secrets
import threading
from typing import Any, Optional

from agent.callbacks import StatusKind
from agent.host import TurnHost
from agent.persistence import CompactionRefused, StoreError
from hermes_core.tokens import (estimate_messages_tokens_rough, estimate_text_tokens,
                                estimate_tools_tokens)

log = logging.getLogger(__name__)

LOCK_TTL_SECONDS = 300
LEASE_REFRESH_SECONDS = 60


def compression_skipped_due_to_lock(agent: object) -> bool:
    """True only for the two values the host sets on a lock-skip: ``True`` or a holder string.

    Type-pinned on purpose: test doubles auto-create truthy attributes, and anything else
    (None, 1, lists, mocks) must never divert a turn into the defer path. The one ``getattr``
    on the host: the seed hands it objects without the attribute.
    """
    value = getattr(agent, "_compression_skipped_due_to_lock", None)
    return value is True or isinstance(value, str)


def made_progress(before: list, after: list) -> bool:
    """A pass made progress when it returned fewer messages or cut the rough tokens by >= 5%."""
    if after is before:
        return False
    if len(after) < len(before):
        return True
    b = estimate_messages_tokens_rough(before)
    return b > 0 and estimate_messages_tokens_rough(after) <= b * 0.95


LOCK_LOST_WARNING = ("Compaction discarded: another process took over compressing this session "
                     "while the summary was being written. The conversation is unchanged.")


def lock_holder(agent: TurnHost) -> str:
    """``pid=…:tid=…:agent=…:nonce=…:host=…``; the host
    (``hermes_state.machine_id``) keeps
    another machine's pid from ever being judged dead here."""
    from hermes_state import machine_id

    return (f"pid={os.getpid()}:tid={threading.get_ident()}:agent={id(agent):x}"
            f":nonce={secrets.token_hex(4)}:host={machine_id()}")


class LeaseRefresher:
    """Extends the lock's lease while a long summary runs, so a live holder is never reclaimed.

    A refresh that finds the lock no longer ours sets ``lost``: the compaction must then be
    discarded (the commit is fenced by the store as well).
    """

    def __init__(self, db: Any, session_id: str, holder: str, ttl: float, every: float) -> None:
        self._stop = threading.Event()
        self.lost = threading.Event()
        self._args = (db, session_id, holder, ttl)
        self._every = every
        self._thread = threading.Thread(target=self._run, name="hermes-lock-lease", daemon=True)

    def _run(self) -> None:
        db, session_id, holder, ttl = self._args
        while not self._stop.wait(self._every):
            try:
                if not db.refresh_compression_lock(session_id, holder, ttl_seconds=ttl):
                    log.warning("compression lock for %s was lost while summarising", session_id)
                    self.lost.set()
                    return
            except Exception as exc:  # the summary goes on; the next refresh may succeed
                log.warning("could not refresh compression lock: %s", exc)

    def __enter__(self) -> "LeaseRefresher":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _acquire(agent: TurnHost, db: Any, session_id: str) -> Optional[str]:
    """The holder string on success; on failure sets the lock-skip signal and returns None."""
    holder = lock_holder(agent)
    try:
        ok = db.try_acquire_compression_lock(session_id, holder, ttl_seconds=LOCK_TTL_SECONDS)
    except Exception as exc:
        log.warning("compression lock acquire failed: %s", exc)
        ok = False
    if ok:
        return holder
    _signal_lock_skip(agent, db, session_id)
    return None


def _release(db: Any, session_id: str, holder: str) -> None:
    try:
        db.release_compression_lock(session_id, holder)
    except Exception as exc:
        log.warning("could not release compression lock: %s", exc)


def _signal_lock_skip(agent: TurnHost, db: Any, session_id: str) -> None:
    """The lock is (now) someone else's: the signal names the holder, or is True when unknown."""
    current = None
    try:
        current = db.get_compression_lock_holder(session_id)
    except Exception:
        pass
    agent._compression_skipped_due_to_lock = (current if isinstance(current, str) and current
                                              else True)


def _discard_lost(agent: TurnHost, db: Any, session_id: str, messages: list,
                  system_message: str) -> tuple[list, str]:
    """The lease was lost during the summary: drop the compaction, and treat the pass as a
    lock-skip (another process may be compressing now), so a 413 defers the turn instead of
    exhausting it."""
    agent.emit_status(StatusKind.WARNING, LOCK_LOST_WARNING)
    _signal_lock_skip(agent, db, session_id)
    return messages, system_message


def _run_compressor(agent: TurnHost, messages: list, system_message: str,
                    approx_tokens: Optional[int], overflowed: bool,
                    **options: Any) -> Any:
    """The compressor's pass; it takes the history's tokens and the rest of the request (system,
    tools) apart."""
    comp = agent.context_compressor
    extra = estimate_text_tokens(system_message or "") + estimate_tools_tokens(agent.tools)
    if approx_tokens is not None:
        current = max(0, approx_tokens - extra)
    else:
        current = estimate_messages_tokens_rough(messages)
    if overflowed:  # the provider said it does not fit, whatever our estimate says
        current = max(current, getattr(comp, "window", comp.context_length) + 1 - extra)
    return comp.compress(messages, current_tokens=current, extra_tokens=extra, **options)


def _commit(agent: TurnHost, lease: Optional[LeaseRefresher], holder: Optional[str],
            messages: list, system_message: str, result: Any) -> tuple[list, str]:
    """Make a pass that made progress the history (store first); the input back when it could
    not be committed."""
    db, session_id = agent.session_db, agent.session_id
    if lease is not None and lease.lost.is_set():
        return _discard_lost(agent, db, session_id, messages, system_message)
    try:
        agent.commit_compaction(messages, result.messages, lock_holder=holder)
    except CompactionRefused as exc:  # the store's fence: the lease was lost during the summary
        log.warning("compaction of %s refused: %s", session_id, exc)
        return _discard_lost(agent, db, session_id, messages, system_message)
    except StoreError as exc:  # keep the full history rather than a compaction the store lacks
        agent.emit_status(StatusKind.WARNING, f"Compaction not applied: the session store "
                                              f"failed ({exc}). The conversation is unchanged.")
        return messages, system_message
    system_message = agent.refresh_memory_snapshot(system_message)  # SPEC §8: picked up here
    how = ("summary" if result.summarized
           else "deterministic digest" if result.fallback else "pruning")
    agent.emit_status(StatusKind.COMPRESSION,
                      f"Compressed context by {how}: {len(messages)} -> {len(result.messages)} "
                      f"messages, ~{result.before_tokens:,} -> ~{result.after_tokens:,} tokens.")
    return result.messages, system_message


def compress_context(agent: TurnHost, messages: list, system_message: str, *,
                     approx_tokens: Optional[int] = None, focus: Optional[str] = None,
                     force: bool = False, overflowed: bool = False) -> tuple[list, str]:
    """One compression pass under the session's lock; returns (messages, system prompt).

    Returns the very list it was given when nothing changed (lock held elsewhere or lost during
    the summary, nothing to do, no progress, summary failed while the request still fits), so
    callers can test identity. The commit is fenced: it happens only while this pass still holds
    the lock.
    """
    agent._compression_skipped_due_to_lock = None
    if agent.context_compressor is None or len(messages) < 2:
        return messages, system_message
    db, session_id = agent.session_db, agent.session_id
    holder = None
    if db is not None and session_id:
        holder = _acquire(agent, db, session_id)
        if holder is None:
            return messages, system_message
    lease = None
    try:
        run = (messages, system_message, approx_tokens, overflowed)
        if holder is not None:
            with LeaseRefresher(db, session_id, holder, LOCK_TTL_SECONDS,
                                LEASE_REFRESH_SECONDS) as lease:
                result = _run_compressor(agent, *run, focus=focus, force=force)
        else:
            result = _run_compressor(agent, *run, focus=focus, force=force)
        if result.warning:
            agent.emit_status(StatusKind.WARNING, result.warning)
        if not result.changed or not made_progress(messages, result.messages):
            # a pass that made no progress is not committed either: the caller keeps its list,
            # and the store must keep matching it
            return messages, system_message
        return _commit(agent, lease, holder, messages, system_message, result)
    finally:
        if holder is not None:
            _release(db, session_id, holder)
