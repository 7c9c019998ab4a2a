"""What the store does to a pooled PostgreSQL connection before a write, without a round trip:
notice one that died while idle."""
from __future__ import annotations

import select

import psycopg


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
