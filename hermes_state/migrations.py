"""The schema's migrations by name, one list for both backends. Pure: no database here.

Each backend maps every name of ``NAMES`` to its own step (``sqlite_schema.STEPS``,
``postgres_schema.STEPS``) and records what it applied in ``schema_migrations(name,
applied_at)``, one transaction per step. Append a name (and a step on both backends) to change
the schema; never rename, reorder or edit an old one.

Stores from before the names counted instead: SQLite's ``PRAGMA user_version`` = how many of
the first names were applied; PostgreSQL's ``schema_version`` table held 1 for the first five,
then one more per name. Every migration transaction records the names they stand for (a
Hermes from before the names may be upgrading the same store at once) and keeps them current,
so such a Hermes still finds the store up to date.
"""
from __future__ import annotations

from typing import Iterable, Mapping

from .common import unusable

NAMES: tuple[str, ...] = ("core", "fts", "delegations", "api_responses", "cron", "pairing",
                          "owners", "seq_counter", "fts_prefix")
PG_LEGACY_FIRST = 5  # the names PostgreSQL's schema_version 1 stood for


def check_steps(backend: str, steps: Mapping[str, object]) -> None:
    """Fail at import when a backend's steps and ``NAMES`` disagree (a step forgotten)."""
    if set(steps) != set(NAMES):
        missing = sorted(set(NAMES) - set(steps))
        extra = sorted(set(steps) - set(NAMES))
        raise AssertionError(f"{backend} migration steps: missing {missing}, unknown {extra}")


def in_order(applied: Iterable[str]) -> list[str]:
    """Applied names in ``NAMES`` order; names this Hermes does not know last, by name."""
    rank = {name: i for i, name in enumerate(NAMES)}
    return sorted(set(applied), key=lambda n: (rank.get(n, len(NAMES)), n))


def pending(applied: Iterable[str]) -> list[str]:
    """The names still to apply, in order."""
    done = set(applied)
    return [name for name in NAMES if name not in done]


def unknown(applied: Iterable[str]) -> list[str]:
    return sorted(set(applied) - set(NAMES))


def refuse_unknown(applied: Iterable[str], label: str) -> None:
    """A store a newer Hermes migrated is not opened: this code cannot know what changed."""
    names = unknown(applied)
    if names:
        raise unusable(f"the session store {label} has migrations this Hermes does not know "
                       f"({', '.join(names)}): a newer Hermes upgraded it. Upgrade Hermes to "
                       "open it (or point store.url / HERMES_DATABASE_URL at another store)")


def from_user_version(version: int, label: str) -> list[str]:
    """The names a SQLite store at ``PRAGMA user_version = version`` had applied."""
    if version > len(NAMES):
        raise unusable(f"the session store {label} is at schema version {version}, this Hermes "
                       f"knows {len(NAMES)}: a newer Hermes upgraded it. Upgrade Hermes to open it")
    return list(NAMES[:max(0, version)])


def from_schema_version(version: int, label: str) -> list[str]:
    """The names a PostgreSQL store at ``schema_version = version`` had applied."""
    if version <= 0:
        return []
    known = len(NAMES) - PG_LEGACY_FIRST + 1
    if version > known:
        raise unusable(f"the session store {label} is at schema version {version}, this Hermes "
                       f"knows {known}: a newer Hermes upgraded it. Upgrade Hermes to open it")
    return list(NAMES[:PG_LEGACY_FIRST + version - 1])


def prefix_count(applied: Iterable[str]) -> int:
    """How many of ``NAMES``, from the first, are applied: SQLite's old ``user_version``."""
    done = set(applied)
    count = 0
    while count < len(NAMES) and NAMES[count] in done:
        count += 1
    return count


def legacy_schema_version(applied: Iterable[str]) -> int:
    """PostgreSQL's old version number for ``applied`` (0 until the first five are all in)."""
    return max(0, prefix_count(applied) - PG_LEGACY_FIRST + 1)


def problems(applied: Iterable[str]) -> list[str]:
    """What ``integrity_check`` reports about the recorded migrations (empty: all in order)."""
    applied = list(applied)
    out = []
    if pending(applied):
        out.append(f"migrations not applied: {', '.join(pending(applied))}")
    if unknown(applied):
        out.append(f"migrations this Hermes does not know: {', '.join(unknown(applied))}")
    return out
