"""PostgreSQL full-text search for ``session_search``: the first matching message per session,
newest (or oldest) first, or the best-ranked among the newest matches.

Why two paths: the planner cannot tell a word in half the messages from one in ten, and for
``ORDER BY id DESC LIMIT n`` it likes to walk the primary key testing every row, which for a
rare word means reading the whole table (seconds). So the newest ``WINDOW`` row ids are scanned
by primary key first (cheap whatever the word: a common word is answered there); only if that
window does not hold enough hits are the older matches read through the GIN index, with
``ORDER BY id + 0`` so the planner cannot walk the key instead (a word reaching this step is
rare in the recent rows, so its matches are few to sort). No step counts or ranks every match.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from .backend import Row
from .postgres_schema import TS_CONFIG

Read = Callable[[str, Iterable[Any]], list[Row]]
HEADLINE = "StartSel=»,StopSel=«,MaxWords={},MinWords=4,MaxFragments=1,FragmentDelimiter=…"
WINDOW = 2_000  # the newest (oldest) row ids scanned by primary key first
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


def _sql(ranked: bool, way: str, where: str, bounds: str) -> str:
    """One step's query: the matches within ``bounds`` (SQL over ``m.id``), the first per
    session in ``way`` order (``ranked``: the newest matches with their rank)."""
    rank = f"ts_rank(m.search, {QUERY})" if ranked else "0"
    base = ("SELECT m.session_id, m.id AS message_id, m.role, m.active, m.compacted, s.title,"
            f" s.source, s.started_at, s.updated_at, {rank} AS rank"
            " FROM messages AS m JOIN sessions AS s ON s.id = m.session_id"
            f" WHERE m.search @@ {QUERY} AND {bounds}{where}")
    if ranked:
        return f"{base} ORDER BY m.id + 0 DESC LIMIT ?"
    return (f"SELECT * FROM (SELECT DISTINCT ON (session_id) * FROM ({base}) AS w"
            f" ORDER BY session_id, message_id {way}) AS h ORDER BY message_id {way} LIMIT ?")


def session_hits(read: Read, match: str, want: int, sort: str, child_filter: str,
                 relevance_pool: int, filter_params: Iterable[Any] = ()) -> list[dict[str, Any]]:
    """Up to ``want`` sessions' first hit in ``sort`` order (``relevance``: the best-ranked
    among the newest ``relevance_pool`` matches); see the module docstring for the two steps."""
    ranked, oldest = sort == "relevance", sort == "oldest"
    way, where = ("ASC" if oldest else "DESC"), (f" AND {child_filter}" if child_filter else "")
    filters = list(filter_params)
    low, top = (int(v) for v in read("SELECT COALESCE(MIN(id), 0), COALESCE(MAX(id), 0)"
                                     " FROM messages", ())[0])
    edge = low + WINDOW if oldest else top - WINDOW  # the window: ids up to / past this one
    steps = [f"m.id <= {edge}" if oldest else f"m.id > {edge}"]
    if low <= edge < top:  # then the rest, through the GIN index (``+ 0``: not by primary key)
        steps.append(f"m.id + 0 > {edge}" if oldest else f"m.id + 0 <= {edge}")
    rank_params = [match] if ranked else []
    seen: set[str] = set()
    hits: list[dict[str, Any]] = []
    pool: list[dict[str, Any]] = []
    for bounds in steps:
        room = relevance_pool - len(pool) if ranked else want + len(seen)
        sql = _sql(ranked, way, where, bounds)
        for row in read(sql, (*rank_params, match, *filters, room)):
            d = dict(row)
            if ranked:
                pool.append(d)
            elif d["session_id"] not in seen and len(hits) < want:
                seen.add(d["session_id"])
                hits.append(d)
        if len(hits) >= want or len(pool) >= relevance_pool:
            break
    for d in sorted(pool, key=lambda r: (-r["rank"], -r["message_id"])):
        if d["session_id"] not in seen and len(hits) < want:
            seen.add(d["session_id"])
            hits.append(d)
    for d in hits:
        d.pop("rank", None)
    return hits


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
