"""The converted history kept between requests, so a turn converts only the new tail.

A conversation's every request resends the whole OpenAI-shaped history; converting it again
(``convert.convert_messages``) is the Anthropic path's main overhead next to the OpenAI one. Each
entry here keeps the source messages it converted, as deep copies, with their turns; a request
whose history starts with exactly those messages (compared by value, so a message edited in
place, a compression rewriting the middle or another session's history all miss) reuses the
turns and converts the rest. Process-wide (clients are lent per request), a few entries (one per
conversation in flight), guarded by a lock; the kept turns are never changed afterwards: the
caller copies the ones it adds breakpoints to (``convert._mark``), this module copies the last
one before a tail may merge into it.
"""
from __future__ import annotations

import copy
import threading
from dataclasses import dataclass
from typing import Optional

from agent.providers.anthropic.convert import (ThinkingLookup, Where, extend_turns,
                                               finish_turns)

MAX_ENTRIES = 8


@dataclass(frozen=True)
class Entry:
    """``source`` (copies of the messages) converted into ``turns``/``where``, before
    ``finish_turns``; ``thinking``: whether kept thinking blocks were looked up."""

    source: list[dict]
    turns: list[dict]
    where: Where
    thinking: bool


_entries: list[Entry] = []  # most recently used last
_lock = threading.Lock()


def matches(entry: Entry, messages: list[dict], thinking: bool) -> bool:
    """``messages`` starts with the entry's source, unchanged."""
    n = len(entry.source)
    if entry.thinking != thinking or n > len(messages) or n == 0:
        return False
    return messages[n - 1] == entry.source[-1] and messages[:n] == entry.source


def _lookup(messages: list[dict], thinking: bool) -> Optional[Entry]:
    with _lock:
        found = next((e for e in reversed(_entries) if matches(e, messages, thinking)), None)
        if found is not None:
            _entries.remove(found)
            _entries.append(found)
    return found


def _store(entry: Entry, replaces: Optional[Entry]) -> None:
    with _lock:
        if replaces is not None and replaces in _entries:
            _entries.remove(replaces)
        _entries.append(entry)
        del _entries[:-MAX_ENTRIES]


def convert(messages: list[dict], thinking: Optional[ThinkingLookup] = None
            ) -> tuple[list[dict], Where]:
    """``convert.convert_messages``, reusing the conversion of an unchanged head."""
    wants = thinking is not None
    prior = _lookup(messages, wants)
    if prior is None:
        turns, where, done = [], [], 0
    else:
        turns, where, done = list(prior.turns), list(prior.where), len(prior.source)
    tail = messages[done:]
    if tail and turns:  # the tail's first message may merge into the last turn
        turns[-1] = {**turns[-1], "content": list(turns[-1]["content"])}
    extend_turns(turns, where, tail, thinking)
    if tail:
        source = (prior.source if prior else []) + copy.deepcopy(tail)
        _store(Entry(source, turns, where, wants), prior)
    return finish_turns(turns, where)


def clear() -> None:
    """Forget every entry (tests; a process that wants the memory back)."""
    with _lock:
        _entries.clear()
