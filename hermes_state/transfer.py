"""Copy a SQLite store into PostgreSQL (``hermes store migrate``), losing nothing.

Every table, row ids kept (so cron runs, delegations and message positions still line up), in
one PostgreSQL transaction: a failure leaves the target as it was. The search column is computed
as each message is written, so the copy arrives indexed. Counts are compared table by table.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Callable, Optional

from .common import SessionDBError, clean_params, redact_url, scrub

# Parents before children (foreign keys); identity columns get their sequence moved past the
# copied ids.
TABLES = ("sessions", "messages", "compression_locks", "session_keys", "delegations",
          "api_responses", "cron_jobs", "cron_runs", "pairing_state")
IDENTITY = {"messages": "id", "cron_runs": "id"}
PROGRESS_EVERY = 5_000

Progress = Callable[[str], None]


class TransferError(SessionDBError):
    """The copy was refused or failed; the target is unchanged."""


def _columns_sqlite(src: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in src.execute(f"PRAGMA table_info({table})")]


def _columns_pg(conn: object, table: str) -> set[str]:
    rows = conn.execute("SELECT column_name FROM information_schema.columns WHERE table_name = %s"
                        " AND table_schema = current_schema() AND is_generated = 'NEVER'",
                        (table,)).fetchall()
    return {r[0] for r in rows}


def target_rows(conn: object) -> dict[str, int]:
    return {t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in TABLES}


def copy_store(sqlite_path: Path, url: str, force: bool = False,
               progress: Optional[Progress] = None) -> dict[str, tuple[int, int]]:
    """Copy ``sqlite_path`` into the database at ``url``; returns ``{table: (source, target)}``
    row counts. A target holding Hermes rows is refused unless ``force`` (then its Hermes tables
    are emptied first, inside the same transaction)."""
    import psycopg

    from .store import SessionDB
    say = progress or (lambda _line: None)
    if not Path(sqlite_path).is_file():
        raise TransferError(f"no SQLite store at {sqlite_path}; pass --from PATH")
    SessionDB(sqlite_path).close()  # bring the source to the current schema first
    SessionDB(url=url).close()  # reach and migrate the target (a clear error if unreachable)
    src = sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True)
    try:
        with psycopg.connect(url) as conn:
            with conn.transaction():
                existing = {t: n for t, n in target_rows(conn).items() if n}
                if existing and not force:
                    listed = ", ".join(f"{t} {n}" for t, n in existing.items())
                    raise TransferError(f"the target already holds Hermes data ({listed}); "
                                        "use --force to replace it, or pick an empty database")
                if existing:
                    say("emptying the target's Hermes tables (--force)")
                    conn.execute(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE")
                for table in TABLES:
                    _copy_table(src, conn, table, say)
                counts = {t: (int(src.execute(f"SELECT count(*) FROM {t}").fetchone()[0]), n)
                          for t, n in target_rows(conn).items()}
                wrong = {t: c for t, c in counts.items() if c[0] != c[1]}
                if wrong:
                    raise TransferError("row counts differ after the copy (" + ", ".join(
                        f"{t}: {a} vs {b}" for t, (a, b) in wrong.items()) + "); nothing was kept")
        return counts
    except psycopg.Error as exc:
        raise TransferError(f"copy to {redact_url(url)} failed: {scrub(str(exc), url)}; "
                            "nothing was kept") from None
    finally:
        src.close()


def _copy_table(src: sqlite3.Connection, conn: object, table: str, say: Progress) -> None:
    wanted = _columns_pg(conn, table)
    cols = [c for c in _columns_sqlite(src, table) if c in wanted]
    total = int(src.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    say(f"{table}: copying {total:,} rows")
    col_list = ", ".join(cols)
    done = 0
    import psycopg

    row: tuple = ()
    try:
        with conn.cursor().copy(f"COPY {table} ({col_list}) FROM STDIN") as copy:
            for row in src.execute(f"SELECT {col_list} FROM {table}"):
                copy.write_row(clean_params(row))  # a NUL in old text: replaced as every write does
                done += 1
                if done % PROGRESS_EVERY == 0:
                    say(f"{table}: {done:,}/{total:,}")
    except psycopg.Error as exc:  # name the row, so it can be fixed or removed
        where = getattr(exc.diag, "context", None) or f"{table} row {cols[0]}={row[:1]!r}"
        what, at = " ".join(str(exc).split()), " ".join(str(where).split())[:200]
        raise psycopg.Error(f"{what} ({at})") from exc
    if table in IDENTITY:
        col = IDENTITY[table]
        conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', '{col}'),"
                     f" (SELECT coalesce(max({col}), 0) + 1 FROM {table}), false)")
