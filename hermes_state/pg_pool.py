"""What the store does to a pooled PostgreSQL connection around a write, without round trips:
set it up once (the append function) and notice one that died while idle."""
from __future__ import annotations

import select
import weakref

import psycopg

from .appends import PG_FUNCTION

_WITHOUT_APPEND: "weakref.WeakSet[psycopg.Connection]" = weakref.WeakSet()


def install_append(conn: psycopg.Connection) -> None:
    """The pool's ``configure``: this connection's ``pg_temp.hermes_append`` (see ``appends``).
    A role without the TEMP privilege cannot have it: its appends take the shared statements."""
    try:
        conn.execute(PG_FUNCTION)
    except psycopg.errors.InsufficientPrivilege:
        _WITHOUT_APPEND.add(conn)


def drop_if_closed_while_idle(conn: psycopg.Connection) -> None:
    """Close and raise ``OperationalError`` when a pooled connection died while idle (e.g. the
    server restarted), without a round trip: an idle connection has nothing to read, so a
    readable socket is the server's goodbye. Why: a pipelined or one-statement write sends
    everything at once, so no BEGIN of its own finds the dead connection before anything was
    sent (which is what makes retrying it safe)."""
    poller = select.poll()
    try:
        poller.register(conn.fileno(), select.POLLIN)
        readable = bool(poller.poll(0))
    except (OSError, ValueError, psycopg.Error):
        readable = True
    if readable:
        conn.close()
        raise psycopg.OperationalError("the connection was closed while idle in the pool")


def lacks_append(conn: psycopg.Connection) -> bool:
    """``install_append`` could not give this connection the function."""
    return conn in _WITHOUT_APPEND
