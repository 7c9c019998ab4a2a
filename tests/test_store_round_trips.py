"""What the gateway's hot path asks of the store, in fewer round trips on PostgreSQL: one-statement
writes (``write_one``: a new session row, a key binding, a session update) and one-read lookups
(``live_session_for_key``). Pinned on both backends: the behaviour is the same as the longer
forms it replaced, and on PostgreSQL a one-statement write sends exactly one statement."""
from __future__ import annotations

import pytest


def test_creating_an_existing_session_leaves_it_as_it_was(store):
    sid = store.create_session("s1", source="telegram", model="m1", owner="telegram:7")
    assert store.create_session("s1", source="cli", model="other") == sid
    row = store.get_session(sid)
    assert (row["source"], row["model"], row["owner"]) == ("telegram", "m1", "telegram:7")


def test_a_titled_session_still_checks_the_title_is_free(store):
    store.create_session("a", title="Plans")
    with pytest.raises(Exception, match="Plans"):
        store.create_session("b", title="Plans")
    assert store.get_session("b") is None


def test_a_key_leads_to_its_session_only_while_that_session_exists(store):
    assert store.live_session_for_key("api_server:k") is None
    sid = store.create_session()
    store.bind_session_key("api_server:k", sid)
    assert store.live_session_for_key("api_server:k") == sid
    store.delete_session(sid)
    assert store.live_session_for_key("api_server:k") is None


def test_a_new_chat_session_and_its_key_are_one_write(store):
    sid = store.create_session_for_key("telegram:dm:7", "s7", source="telegram", user_id="7",
                                       owner="telegram:7")
    assert sid == "s7" and store.live_session_for_key("telegram:dm:7") == "s7"
    row = store.get_session("s7")
    assert (row["source"], row["user_id"], row["owner"]) == ("telegram", "7", "telegram:7")
    moved = store.create_session_for_key("telegram:dm:7", source="telegram", parent_session_id=sid)
    assert moved != sid and store.live_session_for_key("telegram:dm:7") == moved
    assert store.get_session(moved)["parent_session_id"] == sid
    assert store.create_session_for_key("telegram:dm:8", "s7", source="cli") == "s7"
    assert store.get_session("s7")["source"] == "telegram"  # an existing row stays as it was
    assert store.live_session_for_key("telegram:dm:8") == "s7"


def test_a_system_prompt_rides_on_an_append(store):
    sid = store.create_session()
    ids = store.append_messages(sid, [{"role": "user", "content": "hi"},
                                      {"role": "assistant", "content": "hello"}],
                                usage=(5, 2), system_prompt="You are terse.")
    row = store.get_session(sid)
    assert len(ids) == 2 and row["system_prompt"] == "You are terse."
    assert (row["prompt_tokens"], row["completion_tokens"]) == (5, 2)
    assert [m["content"] for m in store.get_messages(sid)] == ["hi", "hello"]


def test_updates_and_unbinds_report_whether_a_row_changed(store):
    sid = store.create_session()
    assert store.set_system_prompt(sid, "You are terse.") is True
    assert store.get_session(sid)["system_prompt"] == "You are terse."
    assert store.set_system_prompt("missing", "x") is False
    store.bind_session_key("k", sid)
    assert store.unbind_session_key("k") is True and store.unbind_session_key("k") is False


def _logged(cluster, url: str, work) -> list[str]:
    """The statements the server logged for ``url``'s database while ``work(db)`` ran on a
    SessionDB opened after statement logging was switched on."""
    from hermes_state import SessionDB
    from tests.postgres import StatementLog

    log = StatementLog(cluster, url)
    db = SessionDB(url=url)
    try:
        log.begin()
        work(db)
        return log.sent()
    finally:
        db.close()


def test_a_one_statement_write_sends_one_statement_on_postgresql(pg_cluster, pg_url):
    """No BEGIN or COMMIT of its own: the server's statement log shows one statement each."""
    def work(db) -> None:
        sid = db.create_session("s1")
        db.set_system_prompt(sid, "p")
        db.bind_session_key("k", sid)
        assert db.live_session_for_key("k") == sid
    sent = _logged(pg_cluster, pg_url, work)
    assert [q.split()[0].upper() for q in sent] == ["INSERT", "UPDATE", "INSERT", "SELECT"], sent
    sent = _logged(pg_cluster, pg_url, lambda db: db.create_session_for_key("k2", "s2"))
    assert [q.split()[0].upper() for q in sent] == ["WITH"], sent


def test_a_first_append_with_its_system_prompt_is_one_statement_on_postgresql(pg_cluster,
                                                                             pg_url):
    """A new session's first append carries its system prompt, under a turn lease's fence too:
    one statement, the prompt stored, and a later append without one keeps it."""
    from gateway.lease import lease_name

    def work(db) -> None:
        db.append_messages("p1", [{"role": "user", "content": "hi"}], system_prompt="Be brief.")
        with db.advisory_lock(lease_name("p2"), wait=0) as got:
            assert got
            fence = db.lock_fence(lease_name("p2"))
            db.append_messages("p2", [{"role": "user", "content": "hi"}], fence=fence,
                               system_prompt="Be kind.")
            db.append_messages("p2", [{"role": "assistant", "content": "hello"}], fence=fence)
    sent = _logged(pg_cluster, pg_url, work)
    appends = [q for q in sent if "advisory" not in q and "pg_stat_get_activity(pg_backend" not in q]
    assert [q.split()[0].upper() for q in appends] == ["WITH", "WITH", "WITH"], sent
    from hermes_state import SessionDB
    with SessionDB(url=pg_url) as db:
        assert db.get_session("p1")["system_prompt"] == "Be brief."
        assert db.get_session("p2")["system_prompt"] == "Be kind."
        assert [m["content"] for m in db.get_messages("p2")] == ["hi", "hello"]


def test_a_statement_is_prepared_on_its_first_run_on_postgresql(pg_cluster, pg_url):
    """Each pooled connection prepares a statement the first time it runs it: the server plans
    it from its first run on, not after five runs parsed and planned from scratch each (a new
    worker's first turns paid that on every connection of its pool)."""
    from hermes_state import SessionDB
    from tests.postgres import StatementLog

    log = StatementLog(pg_cluster, pg_url)
    with SessionDB(url=pg_url) as db:
        log.begin()
        db.append_messages("w1", [{"role": "user", "content": "hi"}], usage=(3, 0))
        db.append_messages("w1", [{"role": "assistant", "content": "hello"}], usage=(0, 2))
        assert db.live_session_for_key("nope") is None
        ran = log.executed()
        assert [m["content"] for m in db.get_messages("w1")] == ["hi", "hello"]
    appends = [how for how, text in ran if text.startswith("WITH s AS")]
    assert len(appends) == 2 and all(how.startswith("_pg3_") for how in appends), ran


def test_a_session_and_its_live_history_are_read_together(store):
    assert store.session_and_history("missing") == (None, [], [])
    sid = store.create_session(system_prompt="You are terse.")
    assert store.session_and_history(sid)[1:] == ([], [])
    ids = store.append_messages(sid, [{"role": "user", "content": "hi"},
                                      {"role": "assistant", "content": "hello"}])
    store.deactivate_messages(sid, ids[1:])
    row, messages, row_ids = store.session_and_history(sid)
    assert row["system_prompt"] == "You are terse."
    assert (messages, row_ids) == store.get_active_history(sid) == (
        [{"role": "user", "content": "hi"}], ids[:1])
