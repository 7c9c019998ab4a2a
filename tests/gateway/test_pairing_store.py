"""Pairing lives in the session store (both backends); old pairing files are imported once."""
from __future__ import annotations

import json
import threading

from gateway.access import AccessControl, PairingStore


def test_pairing_round_trip_on_both_backends(store, hermes_home) -> None:
    pairing = PairingStore(hermes_home, db=store)
    acl = AccessControl(pairing, env={})
    code = pairing.request_code("telegram", "7", "ann", "7")
    assert code and pairing.request_code("telegram", "7") == code
    assert PairingStore(hermes_home, db=store).list()["telegram"]["pending"][code]["user_id"] == "7"
    assert pairing.approve("Telegram", code.lower())["user_name"] == "ann"
    assert acl.is_allowed("telegram", "7") and pairing.platforms() == ["telegram"]
    assert pairing.revoke("telegram", "7") and not pairing.revoke("telegram", "7")


def test_concurrent_requests_mint_one_code_per_user(store, hermes_home) -> None:
    pairing = PairingStore(hermes_home, db=store)
    codes: list = []
    threads = [threading.Thread(target=lambda: codes.append(pairing.request_code("tg", "9")))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(codes)) == 1 and len(pairing.list()["tg"]["pending"]) == 1


def test_old_pairing_files_are_imported_once(configured_store, hermes_home) -> None:
    old = hermes_home / "pairing"
    old.mkdir()
    (old / "telegram-approved.json").write_text(json.dumps({"42": {"user_name": "bob"}}))
    (old / "telegram-pending.json").write_text("{not json")  # junk: left alone, nothing lost
    pairing = PairingStore()  # the configured store (SQLite or PostgreSQL) imports the files
    assert pairing.is_approved("telegram", "42")
    assert (old / "telegram-approved.json.imported").exists()
    assert (old / "telegram-pending.json").read_text() == "{not json"
    assert pairing.revoke("telegram", "42")
    pairing.close()
    again = PairingStore()
    assert not again.is_approved("telegram", "42")  # imported once, not again
    again.close()
