"""The §11 search syntax translated for PostgreSQL (pure), and what it finds on both backends."""
from __future__ import annotations

import pytest

from hermes_state.tsquery import to_tsquery_text


@pytest.mark.parametrize("query, expected", [
    ("deploy rocket", "'deploy' & 'rocket'"),
    ('"rocket launcher"', "'rocket launcher'"),
    ("deploy*", "'deploy':*"),
    ("cats OR dogs", "('cats') | ('dogs')"),
    ("cats NOT dogs", "'cats' & !'dogs'"),
    ("a b OR c", "('a' & 'b') | ('c')"),
    ("it's", "'it''s'"),
    ("back\\slash", "'back\\\\slash'"),
    ('"unbalanced', "'unbalanced'"),
    ("OR NOT AND", ""),
    ("* ( ) -", ""),
    ("(grouped)", "'grouped'"),
    ("", ""),
])
def test_translation(query: str, expected: str) -> None:
    assert to_tsquery_text(query) == expected


def test_the_syntax_finds_the_same_rows_on_both_backends(store) -> None:
    a = store.create_session("a")
    b = store.create_session("b")
    store.append_message(a, "user", "deploying the rocket launcher tonight")
    store.append_message(b, "user", "the launcher of rockets is broken")
    store.append_message(b, "assistant", "cats and dogs")

    def sessions(q: str) -> set[str]:
        return {h["session_id"] for h in store.search_messages(q)}

    assert sessions("rocket launcher") == {a, b}
    assert sessions('"rocket launcher"') == {a}
    assert sessions("deploy*") == {a}
    assert sessions("launcher NOT tonight") == {b}
    assert sessions("tonight OR cats") == {a, b}
    assert sessions("what") == set()  # no stop words dropped into "match everything"
    ids = store.append_messages(a, [{"role": "user", "content": "what about the old detail"}])
    store.replace_active_messages(a, [{"role": "user", "content": "summary"}], ids)
    hit = store.search_sessions("detail")[0][0]  # a compacted row stays searchable
    assert hit["session_id"] == a and hit["compacted"] == 1 and "»detail«" in hit["snippet"]


def test_a_common_word_pages_by_the_newest_match_per_session(store) -> None:
    """Past 2,000 matches PostgreSQL reads id windows (like SQLite): same hits, same order."""
    sids = [store.create_session(f"s{i:02d}") for i in range(30)]
    for sid in sids:
        store.append_messages(sid, [{"role": "user", "content": f"common word {n}"}
                                    for n in range(70)])
    store.append_message(sids[0], "user", "common again, newest of all")
    hits, more = store.search_sessions("common", limit=3)
    assert [h["session_id"] for h in hits] == [sids[0], sids[29], sids[28]] and more
    page2, _ = store.search_sessions("common", limit=3, offset=3)
    assert [h["session_id"] for h in page2] == [sids[27], sids[26], sids[25]]
    oldest, _ = store.search_sessions("common", limit=2, sort="oldest")
    assert [h["session_id"] for h in oldest] == [sids[0], sids[1]]
    ranked, _ = store.search_sessions("common", limit=5, sort="relevance")
    assert len({h["session_id"] for h in ranked}) == 5 and all(h["snippet"] for h in ranked)
