"""PostgreSQL full-text search for ``session_search``: the first matching message per session,
newest (or oldest) first, or the best-ranked among the newest matches.

Why windows: the planner cannot tell a word in half the messages from one in ten thousand, and
for ``ORDER BY id DESC LIMIT n`` it likes to walk the primary key testing every row, which for a
rare word reads the whole table (seconds), while a bitmap over the GIN index reads a common
word's whole posting list. So the newest row ids are read by primary key in windows (``WINDOW``,
then 5x, ...; ``OFFSET 0`` keeps the match test out of that scan), which answers a common word
at once; as soon as the matches seen so far say few are left (``GIN_ROWS``), the rest is read
through the GIN index (``id + 0``: not by primary key). No step counts or ranks every match.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from .backend import Row
from .postgres_schema import TS_CONFIG

Read = Callable[[str, Iterable[Any]], list[Row]]
HEADLINE = "StartSel=»,StopSel=«,MaxWords={},MinWords=4,MaxFragments=1,FragmentDelimiter=…"
WINDOW = 1_000  # the newest (oldest) row ids read by primary key first; 5x per window
GIN_ROWS = 5_000  # fewer matches than this expected in the rest: read them through the index
QUERY = f"to_tsquery('{TS_CONFIG}', ?)"


def search_messages_sql(where: str) -> str:
    return ("SELECT m.session_id, m.id AS message_id, m.role,"
            f" ts_headline('{TS_CONFIG}', coalesce(m.content, ''), q,"
            f" '{HEADLINE.format(12)}') AS snippet,"
            " m.created_at, m.active, s.title AS session_title"
            f" FROM messages AS m CROSS JOIN {QUERY} AS q"
            " LEFT JOIN sessions AS s ON s.id = m.session_id"
            f" WHERE m.search @@ q{where}"
            " ORDER BY ts_rank(m.search, q) DESC, m.id DESC LIMIT ?")


_HIT = ("w.session_id, w.message_id, w.role, w.active, w.compacted, w.title, w.source,"
        " w.started_at, w.updated_at")


def _sql(ranked: bool, way: str, where: str, window: str, rest: str) -> str:
    """One step's query: the matches among the rows of ``window`` (SQL over ``id``, read by
    primary key: ``OFFSET 0`` keeps the match test out of that scan, or the planner would read
    a common word's whole GIN posting list) or else matching ``rest`` (over ``m.id``), the
    first per session in ``way`` order (``ranked``: the newest matches with their rank)."""
    rows = f"(SELECT * FROM messages WHERE {window} OFFSET 0)" if window else "messages"
    if ranked:  # ranked after the LIMIT (only the kept rows need it); the tsvector stays there
        base = ("SELECT m.session_id, m.id AS message_id, m.role, m.active, m.compacted, s.title,"
                " s.source, s.started_at, s.updated_at, count(*) OVER () AS matched, m.search"
                f" FROM {rows} AS m JOIN sessions AS s ON s.id = m.session_id"
                f" WHERE m.search @@ {QUERY}{rest}{where}")
        return (f"SELECT {_HIT}, w.matched, ts_rank(w.search, {QUERY}) AS rank FROM ({base}"
                " ORDER BY m.id + 0 DESC LIMIT ?) AS w")
    # the scope (``where``) is a condition on the session: applied to each session's first hit
    first = ("SELECT DISTINCT ON (m.session_id) m.session_id, m.id AS message_id, m.role,"
             " m.active, m.compacted, count(*) OVER () AS matched"
             f" FROM {rows} AS m WHERE m.search @@ {QUERY}{rest}"
             f" ORDER BY m.session_id, m.id {way}")
    return ("SELECT w.session_id, w.message_id, w.role, w.active, w.compacted, s.title, s.source,"
            f" s.started_at, s.updated_at, w.matched FROM ({first}) AS w"
            f" JOIN sessions AS s ON s.id = w.session_id WHERE true{where}"
            f" ORDER BY w.message_id {way} LIMIT ?")


def session_hits(read: Read, match: str, want: int, sort: str, child_filter: str,
                 relevance_pool: int, filter_params: Iterable[Any] = ()) -> list[dict[str, Any]]:
    """Up to ``want`` sessions' first hit in ``sort`` order (``relevance``: the best-ranked
    among the newest ``relevance_pool`` matches); see the module docstring for the windows."""
    ranked, oldest = sort == "relevance", sort == "oldest"
    way, where = ("ASC" if oldest else "DESC"), (f" AND {child_filter}" if child_filter else "")
    filters = list(filter_params)
    low, top = (int(v) for v in read("SELECT COALESCE(MIN(id), 0), COALESCE(MAX(id), 0)"
                                     " FROM messages", ())[0])
    rank_params = [match] if ranked else []  # the outer ts_rank (first in the text)
    seen: set[str] = set()
    hits: list[dict[str, Any]] = []
    pool: list[dict[str, Any]] = []
    # ids read so far, the next window's (ranked: room for the pool at once), matches in them
    done, size, matched = 0, max(WINDOW, 2 * relevance_pool) if ranked else WINDOW, 0
    while done <= top - low and len(hits) < want and len(pool) < relevance_pool:
        edge = low + done if oldest else top - done  # read so far: ids below / past this one
        if done and matched * (top - low - done) <= GIN_ROWS * done:  # few left: the index
            window, rest = "", f" AND m.id + 0 {'>=' if oldest else '<='} {edge}"
            size = top - low + 1
        elif oldest:
            window, rest = f"id > {edge - 1} AND id <= {edge + size - 1}", ""
        else:
            window, rest = f"id <= {edge} AND id > {edge - size}", ""
        room = relevance_pool - len(pool) if ranked else want + len(seen)
        rows = [dict(r) for r in read(_sql(ranked, way, where, window, rest),
                                      (*rank_params, match, *filters, room))]
        matched += int(rows[0]["matched"]) if rows else 0
        for d in rows:
            del d["matched"]
            d.pop("search", None)
            if ranked:
                pool.append(d)
            elif d["session_id"] not in seen and len(hits) < want:
                seen.add(d["session_id"])
                hits.append(d)
        done, size = done + size, _next_size(size, done + size, want - len(hits) if not ranked
                                             else relevance_pool - len(pool),
                                             len(pool) if ranked else len(hits))
    for d in sorted(pool, key=lambda r: (-r["rank"], -r["message_id"])):
        if d["session_id"] not in seen and len(hits) < want:
            seen.add(d["session_id"])
            hits.append(d)
    for d in hits:
        d.pop("rank", None)
    return hits


def _next_size(size: int, done: int, missing: int, found: int) -> int:
    """The next window: twice what the rate so far (``found`` in ``done`` ids) says the
    ``missing`` rest needs, between a fifth of the last window and five times it."""
    if found <= 0:
        return size * 5
    return max(size // 5, min(size * 5, -(-2 * missing * done // found)))


def add_snippets(read: Read, match: str, hits: list[dict[str, Any]]) -> None:
    """Each hit's snippet: one ``ts_headline`` per hit of the page, in one query."""
    if not hits:
        return
    rows = read(f"SELECT id, ts_headline('{TS_CONFIG}', coalesce(content, ''), {QUERY},"
                f" '{HEADLINE.format(16)}') FROM messages WHERE id = ANY(?)",
                (match, [int(h["message_id"]) for h in hits]))
    found = {int(r[0]): r[1] for r in rows}
    for hit in hits:
        hit["snippet"] = found.get(int(hit["message_id"]), "")
