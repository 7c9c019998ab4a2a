"""The memory files' format and the edits the memory tool makes (SPEC §8). Pure: no I/O.

Compatible with Hermes installs: entries are separated by a line holding only ``§`` (the text
``\\n§\\n`` between entries); parsing splits on exactly that, trims, and drops empty and duplicate
entries. Budgets count the characters of the joined text. Entry ids are a short hash of the text,
so they stay the same across sessions and processes for as long as the entry is unchanged.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Optional

from hermes_core.injection import scan

DELIMITER = "\n§\n"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class MemoryEditError(Exception):
    """An edit the model asked for cannot be made; the message says why and what to do."""


def normalise(text: str) -> str:
    """CRLF/CR line ends become LF; a ``§`` line at the very start or end still is a delimiter."""
    return "\n" + text.replace("\r\n", "\n").replace("\r", "\n") + "\n"


def parse(text: str) -> list[str]:
    """Entries of a memory file, in file order, trimmed, without empties or duplicates."""
    out: list[str] = []
    for chunk in normalise(text).split(DELIMITER):
        entry = chunk.strip()
        if entry and entry not in out:
            out.append(entry)
    return out


def serialise(entries: list[str]) -> str:
    """The file text for ``entries`` (what parse() reads back unchanged)."""
    return DELIMITER.join(entries)


def usage(entries: list[str]) -> int:
    """Characters the entries take against the budget."""
    return len(serialise(entries))


def problem(text: str) -> Optional[str]:
    """Why rewriting this file would not reproduce what the user wrote, or None when it is safe.

    Control bytes mean it is not a text file; a ``§`` line that is not exactly a delimiter (spaces
    around it, several on one line) means the user meant entries the parser does not see.
    """
    m = _CONTROL.search(text)
    if m:
        line = text.count("\n", 0, m.start()) + 1
        return f"it holds control bytes (line {line}), so it is not plain text"
    for n, line in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        if "§" in line and line != "§" and not line.strip("§ \t"):
            return f"line {n} looks like an entry separator but is not a line holding only §"
    return None


def entry_id(entry: str) -> str:
    """Short stable id of an entry (6 hex digits of its hash)."""
    return hashlib.sha256(entry.encode("utf-8")).hexdigest()[:6]


def render_entries(entries: list[str], width: Optional[int] = None) -> str:
    """``[id] text`` per entry (cut to ``width`` characters when given), one per line."""
    lines = []
    for e in entries:
        text = " ".join(e.split()) if width else e
        if width and len(text) > width:
            text = text[: width - 1] + "…"
        lines.append(f"[{entry_id(e)}] {text}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Edit:
    """One requested change: ``action`` add | replace | remove on ``target``."""

    target: str
    action: str
    content: str = ""
    old_text: str = ""


def find_entry(entries: list[str], old_text: str) -> int:
    """Index of the one entry ``old_text`` names (an id, or a unique substring)."""
    needle = (old_text or "").strip()
    if not needle:
        raise MemoryEditError("old_text is required: a unique part of the entry, or its id")
    if re.fullmatch(r"\[?[0-9a-fA-F]{6}\]?", needle):
        hits = [i for i, e in enumerate(entries) if entry_id(e) == needle.strip("[]").lower()]
        if len(hits) == 1:
            return hits[0]
    hits = [i for i, e in enumerate(entries) if needle in e]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        listing = render_entries(entries, width=80) or "(no entries)"
        raise MemoryEditError(f"no entry contains {needle[:80]!r}. Entries:\n{listing}")
    listing = render_entries([entries[i] for i in hits], width=80)
    raise MemoryEditError(f"{len(hits)} entries contain {needle[:80]!r}; use a longer part or the "
                          f"id of the one you mean:\n{listing}")


def _clean_content(content: str) -> str:
    text = (content or "").strip()
    if not text:
        raise MemoryEditError("content is empty; give the text of the entry")
    reason = scan(text, strict=True)
    if reason:
        raise MemoryEditError(f"refused: the entry contains {reason}. "
                              "Memory goes into every future prompt, "
                              "so it must not carry instructions, hidden text or secrets")
    if "§" in text.replace("\r\n", "\n").split("\n") or DELIMITER in normalise(text):
        raise MemoryEditError("content must not contain a line holding only §; "
                              "save separate facts as separate entries")
    return text


def apply(entries: list[str], edit: Edit, limit: int, label: str) -> tuple[list[str], str]:
    """The entries after ``edit`` and a one-line note of what happened; raises MemoryEditError.

    An add over ``limit`` is refused with the usage and every entry with its id, so the model can
    consolidate; a duplicate add changes nothing and succeeds.
    """
    entries = list(entries)
    if edit.action == "add":
        text = _clean_content(edit.content)
        if text in entries:
            return entries, f"already saved in {label} as [{entry_id(text)}]; nothing changed"
        new = entries + [text]
        if usage(new) > limit:
            raise MemoryEditError(
                f"{label} is full: {usage(entries):,}/{limit:,} chars used and this entry needs "
                f"{usage(new) - usage(entries):,}. Replace or remove entries (by id) to make room, "
                f"then add. Entries:\n{render_entries(entries) or '(none)'}")
        return new, f"added [{entry_id(text)}] to {label} ({usage(new):,}/{limit:,} chars)"
    if edit.action == "replace":
        i = find_entry(entries, edit.old_text)
        text = _clean_content(edit.content)
        old, before = entries[i], usage(entries)
        if text in entries and text != old:
            del entries[i]  # the new text is already an entry: the replace just merges them
        else:
            entries[i] = text
        # shrinking an over-full file is fine
        if usage(entries) > limit and usage(entries) > before:
            raise MemoryEditError(f"{label} would be {usage(entries):,}/{limit:,} chars after this "
                                  f"replace; make the entry shorter or remove another first")
        return entries, (f"replaced [{entry_id(old)}] with [{entry_id(text)}] in {label} "
                         f"({usage(entries):,}/{limit:,} chars)")
    if edit.action == "remove":
        i = find_entry(entries, edit.old_text)
        old = entries.pop(i)
        return entries, (f"removed [{entry_id(old)}] from {label} "
                         f"({usage(entries):,}/{limit:,} chars)")
    raise MemoryEditError(f"unknown action {edit.action!r}; use add, replace, remove or read")


TITLES = {"memory": "Memory (your notes: environment, conventions, lessons)",
          "user": "User profile (who the user is, preferences, habits)"}


def render_snapshot(files: dict[str, list[str]], limits: dict[str, int]) -> str:
    """The memory part of the system prompt: each non-empty store with ids and usage.

    Entries that look like injection or exfiltration are masked (the file still holds them, and the
    user can see them with ``hermes memory show``); entries past the budget are counted, not shown.
    """
    blocks = []
    for target, entries in files.items():
        if not entries:
            continue
        limit = limits.get(target, 0)
        kept = [e for n, e in enumerate(entries) if n == 0 or usage(entries[: n + 1]) <= limit]
        lines = []
        for e in kept:
            reason = scan(e, strict=True)
            if reason:
                e_shown = f"(held back by Hermes: looks like {reason})"
            else:
                e_shown = (e if len(e) <= limit
                           else e[:limit] + " … (cut: this entry alone is over budget)")
            lines.append(f"[{entry_id(e)}] {e_shown}")
        body = DELIMITER.join(lines)
        rest = len(entries) - len(kept)
        if rest:
            more = f"{rest} more entr{'y' if rest == 1 else 'ies'}"
            body += f"\n({more} past the budget not shown; consolidate)"
        blocks.append(f"## {TITLES.get(target, target)} "
                      f"[{usage(entries):,}/{limit:,} chars, as of session start]\n{body}")
    return "\n\n".join(blocks)
