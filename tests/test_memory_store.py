"""Memory files on disk: atomic writes under a lock, concurrent processes, files it must not touch."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tools.memory import format as fmt
from tools.memory import store as store

ROOT = Path(__file__).resolve().parents[1]
BUDGETS = {"memory": 2200, "user": 1375}


def add(home, target, text):
    return store.apply_edits(home, [fmt.Edit(target, "add", text)], BUDGETS)


def test_add_creates_the_file_in_hermes_format(hermes_home):
    add(hermes_home, "memory", "first fact")
    add(hermes_home, "memory", "second fact")
    path = hermes_home / "memories" / "MEMORY.md"
    assert path.read_text(encoding="utf-8") == "first fact\n§\nsecond fact\n"
    assert path.stat().st_mode & 0o777 == 0o600
    assert store.load(hermes_home, "memory") == ["first fact", "second fact"]
    assert not list(path.parent.glob(".*.tmp"))


def test_existing_hermes_file_loads_and_is_edited_in_place(hermes_home):
    path = hermes_home / "memories" / "USER.md"
    path.parent.mkdir()
    path.write_text("Name: Ada\n§\nPrefers metric units", encoding="utf-8")
    assert store.load(hermes_home, "user") == ["Name: Ada", "Prefers metric units"]
    store.apply_edits(hermes_home, [fmt.Edit("user", "replace", "Name: Ada Lovelace", old_text="Ada")],
                      BUDGETS)
    assert path.read_text(encoding="utf-8") == "Name: Ada Lovelace\n§\nPrefers metric units\n"


def test_batch_is_all_or_nothing_across_both_files(hermes_home):
    add(hermes_home, "memory", "keep me")
    before = (hermes_home / "memories" / "MEMORY.md").read_bytes()
    with pytest.raises(fmt.MemoryEditError):
        store.apply_edits(hermes_home, [fmt.Edit("user", "add", "Name: Bo"),
                                        fmt.Edit("memory", "add", "another"),
                                        fmt.Edit("memory", "remove", old_text="no such entry")], BUDGETS)
    assert (hermes_home / "memories" / "MEMORY.md").read_bytes() == before
    assert not (hermes_home / "memories" / "USER.md").exists()
    notes = store.apply_edits(hermes_home, [fmt.Edit("user", "add", "Name: Bo"),
                                            fmt.Edit("memory", "replace", "kept", old_text="keep")], BUDGETS)
    assert len(notes) == 2
    assert store.load(hermes_home, "user") == ["Name: Bo"] and store.load(hermes_home, "memory") == ["kept"]


@pytest.mark.parametrize("raw, why", [
    (b"good entry\n\xff\xfe junk bytes\n", "not UTF-8"),
    (b"entry\x00with a NUL", "control bytes"),
    (b"one\n\xc2\xa7 \ntwo", "looks like an entry separator"),  # "§ " with a trailing space
])
def test_a_file_it_cannot_reproduce_is_never_overwritten(hermes_home, raw, why):
    path = hermes_home / "memories" / "MEMORY.md"
    path.parent.mkdir()
    path.write_bytes(raw)
    with pytest.raises(store.MemoryStoreError) as err:
        add(hermes_home, "memory", "new fact")
    msg = str(err.value)
    assert why in msg and "was not changed" in msg
    backup = Path(msg.split("A copy is at ")[1].split(". Fix")[0])
    assert backup.read_bytes() == raw and backup.parent == path.parent
    assert path.read_bytes() == raw
    with pytest.raises(store.MemoryStoreError):  # again: the same copy is named, no pile of copies
        add(hermes_home, "memory", "new fact")
    assert len(list(path.parent.glob("MEMORY.md.unparsed-*"))) == 1


def test_a_missing_delimiter_is_one_entry_and_edits_keep_all_text(hermes_home):
    path = hermes_home / "memories" / "MEMORY.md"
    path.parent.mkdir()
    path.write_text("fact one\nfact two written without a separator\n", encoding="utf-8")
    assert store.load(hermes_home, "memory") == ["fact one\nfact two written without a separator"]
    add(hermes_home, "memory", "fact three")
    assert path.read_text(encoding="utf-8") == \
        "fact one\nfact two written without a separator\n§\nfact three\n"


def test_snapshot_leaves_out_a_junk_file_with_a_warning(hermes_home):
    mem = hermes_home / "memories"
    mem.mkdir()
    (mem / "MEMORY.md").write_bytes(b"\xff\xfe\x00garbage")
    (mem / "USER.md").write_text("Name: Ada", encoding="utf-8")
    text, warnings = store.snapshot(hermes_home)
    assert "Name: Ada" in text and "garbage" not in text
    assert len(warnings) == 1 and "MEMORY.md" in warnings[0] and "hermes memory edit memory" in warnings[0]


def test_config_budgets_and_switches(hermes_home):
    from hermes_core.config import parse_config

    cfg = parse_config({"memory": {"memory_char_limit": 150, "user_profile_enabled": False}})
    assert store.limits(cfg) == {"memory": 150, "user": 1375}
    assert store.enabled_targets(cfg) == ("memory",)


WORKER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from tools.memory import format as fmt, store as store
    home, tag, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    for i in range(n):
        store.apply_edits(home, [fmt.Edit("memory", "add", f"{{tag}} fact {{i}}")], {{"memory": 100000, "user": 10}})
    print("done")
""")


def test_two_processes_adding_at_once_keep_every_entry(hermes_home, tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER.format(root=str(ROOT)))
    n = 40
    procs = [subprocess.Popen([sys.executable, str(script), str(hermes_home), tag, str(n)],
                              stdout=subprocess.PIPE, text=True) for tag in ("alpha", "beta")]
    for p in procs:
        out, _ = p.communicate(timeout=60)
        assert p.returncode == 0 and "done" in out
    entries = store.load(hermes_home, "memory")
    assert len(entries) == 2 * n
    assert {f"{tag} fact {i}" for tag in ("alpha", "beta") for i in range(n)} == set(entries)
