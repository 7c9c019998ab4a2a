"""session search past its first window, on both backends (issue 28): PostgreSQL scans the
newest ``pg_search.WINDOW`` row ids by primary key, then the rest through the GIN index; SQLite
reads FTS5 in growing rowid windows, and prefix terms from its prefix index (migration
``fts_prefix``). With the windows made tiny, every path runs on a small store and must give what
a plain reading of the rows gives."""
from __future__ import annotations

import pytest

from hermes_state import pg_search
from hermes_state.sqlite_backend import SQLiteBackend


@pytest.fixture
def corpus(store, monkeypatch):
    """12 sessions, oldest first; 'common' in every message, 'rare' only in two old sessions,
    'andante'/'andiron' (the prefix ``and*``) in three, and a subagent session holding 'rare'."""
    monkeypatch.setattr(pg_search, "WINDOW", 4)
    monkeypatch.setattr(SQLiteBackend, "FIRST_WINDOW", 4)
    sids = []
    for n in range(12):
        words = {1: "rare andante", 2: "rare", 5: "andiron", 9: "andante"}.get(n, "filler")
        sid = store.create_session(source="cli")
        store.append_messages(sid, [{"role": "user", "content": f"common {words} {n}"},
                                    {"role": "assistant", "content": f"common reply {n}"}])
        sids.append(sid)
    kid = store.create_session(source="subagent", parent_session_id=sids[0])
    store.append_messages(kid, [{"role": "user", "content": "rare in a child"}])
    return store, sids, kid


def _ids(hits):
    return [h["session_id"] for h in hits]


def test_a_rare_word_past_the_window_is_found_in_order(corpus):
    store, sids, kid = corpus
    assert _ids(store.search_sessions("rare", limit=5)[0]) == [sids[2], sids[1]]
    assert _ids(store.search_sessions("rare", limit=5, sort="oldest")[0]) == [sids[1], sids[2]]
    assert _ids(store.search_sessions("rare", limit=5, include_children=True)[0]) == [
        kid, sids[2], sids[1]]
    hits, more = store.search_sessions("rare", limit=1)
    assert _ids(hits) == [sids[2]] and more
    assert "»rare«" in hits[0]["snippet"]


def test_a_common_word_is_answered_newest_first_and_paged(corpus):
    store, sids, _kid = corpus
    hits, more = store.search_sessions("common", limit=3)
    assert _ids(hits) == sids[::-1][:3] and more
    page, _ = store.search_sessions("common", limit=3, offset=3)
    assert _ids(page) == sids[::-1][3:6]
    assert _ids(store.search_sessions("common", limit=3, sort="oldest")[0]) == sids[:3]
    ranked, _ = store.search_sessions("common", limit=20, sort="relevance")
    assert sorted(_ids(ranked)) == sorted(sids)


def test_a_short_prefix_matches_every_word_it_starts(corpus):
    store, sids, _kid = corpus
    expected = [sids[9], sids[5], sids[1]]
    for query in ("and*", "an*", "andan*"):
        want = expected if query != "andan*" else [sids[9], sids[1]]
        assert _ids(store.search_sessions(query, limit=5)[0]) == want, query
    assert _ids(store.search_sessions("and* rare", limit=5)[0]) == [sids[1]]
    hits, _ = store.search_sessions("andi*", limit=5)
    assert _ids(hits) == [sids[5]] and "»andiron«" in hits[0]["snippet"]
