"""Finding skills in real folders: Hermes' own layout (category folders, metadata.hermes.tags), skills
written for other agents, external read-only roots, and the junk a skills folder collects (broken
YAML, a 10 MB SKILL.md, non-UTF-8, duplicates) skipped and reported, never a crash. Plus the
starter skills: installed once, marked bundled, a user's copy never overwritten."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from hermes_core.config import HermesConfig
from hermes_core.files import SETTLE_NS
from tools.skills import bundled, index, loader


def write_skill(root: Path, rel: str, front: str, body: str = "Steps.\n", files: dict | None = None) -> Path:
    folder = root / rel
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\n{front}\n---\n{body}", encoding="utf-8")
    for name, data in (files or {}).items():
        p = folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return folder


def cfg(**skills) -> HermesConfig:
    return HermesConfig.model_validate({"skills": skills})


def test_hermes_layout_and_other_agents_skills_load_unchanged(hermes_home):
    root = hermes_home / "skills"
    write_skill(root, "devops/docker-deploy",
                "name: docker-deploy\ndescription: Deploy with docker compose.\nversion: 1.0.0\n"
                "metadata:\n  hermes:\n    tags: [docker, deploy]\n    related_skills: [k8s]",
                files={"references/compose.md": "# compose\n", "templates/app.yml": "a: 1\n",
                       "assets/logo.png": b"\x89PNG\x00\x00"})
    write_skill(root, "notes", "name: notes\ndescription: Take meeting notes.")
    write_skill(root, "mlops/training/axolotl", "name: axolotl\ndescription: Fine-tune with axolotl.")
    write_skill(root, "pdf-tools", "name: pdf-tools\ndescription: |\n  Work with PDFs.\n  Extract text.\n"
                "license: Apache-2.0\nallowed-tools: Bash Read\n")
    cat = loader.load(hermes_home)
    assert cat.problems == []
    by = {s.name: s for s in cat.skills}
    assert set(by) == {"docker-deploy", "notes", "axolotl", "pdf-tools"}
    dd = by["docker-deploy"]
    assert dd.category == "devops" and dd.meta.tags == ["docker", "deploy"] and dd.writable
    assert dd.files() == ["assets/logo.png", "references/compose.md", "templates/app.yml"]
    assert by["notes"].category is None and by["axolotl"].category == "mlops/training"
    assert by["pdf-tools"].description == "Work with PDFs. Extract text."
    assert [s.name for s in cat.skills] == ["notes", "pdf-tools", "docker-deploy", "axolotl"]  # by category


def test_junk_is_skipped_and_named_never_a_crash(hermes_home):
    root = hermes_home / "skills"
    write_skill(root, "good", "name: good\ndescription: Works.")
    write_skill(root, "bad-yaml", "name: [broken\ndescription: x")
    big = write_skill(root, "huge", "name: huge\ndescription: Big.")
    with open(big / "SKILL.md", "a") as fh:
        fh.write("x" * 10_000_000)
    (root / "latin1").mkdir()
    (root / "latin1" / "SKILL.md").write_bytes(b"---\nname: latin1\ndescription: caf\xe9\n---\nx\n")
    write_skill(root, "cat/BadName", "name: Bad Name\ndescription: x")
    write_skill(root, "no-front", "")  # '---\n\n---' is fine: empty front matter, name from the folder
    (root / "plain").mkdir()
    (root / "plain" / "SKILL.md").write_text("# just markdown\n")
    write_skill(root, ".history/good/1/skill", "name: good\ndescription: old copy")  # hidden: ignored
    write_skill(root, "good/assets/example", "name: nested\ndescription: a template, not a skill")
    cat = loader.load(hermes_home)
    assert cat.names() == ["good", "no-front"]
    reasons = {p.path.parent.name: p.reason for p in cat.problems}
    assert set(reasons) == {"bad-yaml", "huge", "latin1", "BadName", "plain"}
    assert "not valid YAML at line 3" in reasons["bad-yaml"]  # the line in SKILL.md
    assert "10.0 MB" in reasons["huge"] and "limit" in reasons["huge"]
    assert "not UTF-8" in reasons["latin1"]
    assert "invalid name" in reasons["BadName"] and "no front matter" in reasons["plain"]
    assert all(r.endswith("skipped") for r in reasons.values())


def test_external_dirs_are_read_only_and_home_wins(hermes_home, tmp_path):
    ext = tmp_path / "team-skills"
    write_skill(ext, "ops/backup", "name: backup\ndescription: Team backup routine.")
    write_skill(ext, "notes", "name: notes\ndescription: Team notes.")
    write_skill(hermes_home / "skills", "notes", "name: notes\ndescription: My notes.")
    cat = loader.load(hermes_home, cfg(external_dirs=[str(ext), "relative-dir"]))
    assert cat.get("notes").description == "My notes."
    assert cat.get("backup").writable is False and cat.get("backup").category == "ops"
    assert any("already loaded" in p.reason for p in cat.problems)


def test_disabled_and_other_os_skills_are_left_out(hermes_home):
    root = hermes_home / "skills"
    write_skill(root, "a", "name: a\ndescription: A.")
    write_skill(root, "b", "name: b\ndescription: B.")
    other = "windows" if not sys.platform.startswith("win") else "linux"
    write_skill(root, "c", f"name: c\ndescription: C.\nplatforms: [{other}]")
    cat = loader.load(hermes_home, cfg(disabled="b"))
    assert cat.names() == ["a"]
    assert {s.name: why for s, why in cat.skipped} == {"b": "disabled in skills.disabled",
                                                       "c": f"only for {other}"}


def test_starter_skills_installed_once_and_marked_bundled(hermes_home):
    assert sorted(bundled.ensure_installed(hermes_home)) == ["code-review", "debugging", "release-checklist"]
    assert bundled.ensure_installed(hermes_home) == []
    cat = loader.load(hermes_home)
    assert all(s.bundled for s in cat.skills) and len(cat.skills) == 3
    text = index.prompt_part(hermes_home)
    assert "- code-review:" in text and len(text) / 4 <= 150  # the bundled index's share of the budget


def _pretend_older_bundle(root: Path, hashes: dict[str, str]) -> None:
    manifest = json.loads((root / loader.BUNDLED_MANIFEST).read_text())
    manifest["bundle"] = "older"
    for name, h in hashes.items():
        manifest["skills"][name]["hash"] = h
    (root / loader.BUNDLED_MANIFEST).write_text(json.dumps(manifest))


def test_an_upgrade_updates_untouched_copies_only(hermes_home):
    root = hermes_home / "skills"
    bundled.ensure_installed(hermes_home)
    base = root / "software-development"
    # code-review: still as an older Hermes installed it; debugging: edited by the user; release: removed
    old = (base / "code-review" / "SKILL.md").read_text().replace("Code review", "Old review")
    (base / "code-review" / "SKILL.md").write_text(old)
    (base / "debugging" / "SKILL.md").write_text((base / "debugging" / "SKILL.md").read_text() + "\nMine.\n")
    import shutil

    shutil.rmtree(base / "release-checklist")
    _pretend_older_bundle(root, {"code-review": bundled.folder_hash(base / "code-review"),
                                 "debugging": "hash-of-the-original", "release-checklist": "whatever"})
    assert bundled.ensure_installed(hermes_home) == ["code-review"]
    assert "# Code review" in (base / "code-review" / "SKILL.md").read_text()
    assert (base / "debugging" / "SKILL.md").read_text().endswith("Mine.\n")
    assert not (base / "release-checklist").exists()


def test_a_users_own_skill_of_a_starter_name_is_theirs(hermes_home):
    write_skill(hermes_home / "skills", "debugging", "name: debugging\ndescription: My own way.")
    bundled.ensure_installed(hermes_home)
    cat = loader.load(hermes_home)
    assert cat.get("debugging").description == "My own way." and not cat.get("debugging").bundled
    assert cat.get("code-review").bundled


def alias_bomb(levels: int = 9) -> str:
    """The ~470-byte front matter of the issue: each level repeats the one before nine times, so
    the description stands for 9**levels strings once anything turns it into text."""
    lines = ['name: bomb', 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for n in range(1, levels):
        lines.append(f"a{n}: &a{n} [" + ",".join([f"*a{n - 1}"] * 9) + "]")
    lines.append(f"description: *a{levels - 1}")
    return "\n".join(lines)


def test_anchors_and_aliases_are_refused_and_fields_type_checked(hermes_home):
    """Issue 20 item 6: YAML aliases let 469 bytes stand for gigabytes (every turn then hit
    MemoryError); a field of the wrong type must not reach the code that uses it."""
    root = hermes_home / "skills"
    assert len(alias_bomb().encode()) < 600
    write_skill(root, "bomb", alias_bomb())
    write_skill(root, "small-alias", "name: small-alias\nx: &x Shared text.\ndescription: *x")
    write_skill(root, "desc-list", "name: desc-list\ndescription: [one, two]")
    write_skill(root, "name-map", "name: {a: 1}\ndescription: A map for a name.")
    write_skill(root, "bad-platforms", "name: bad-platforms\ndescription: Odd.\nplatforms: 7\n"
                "metadata:\n  hermes:\n    tags: 5")
    write_skill(root, "good", "name: good\ndescription: Works.")
    cat = loader.load(hermes_home)
    assert cat.names() == ["bad-platforms", "good"]  # junk in optional fields is ignored, not fatal
    assert cat.get("bad-platforms").meta.tags == [] and cat.get("bad-platforms").meta.platforms == []
    reasons = {p.path.parent.name: p.reason for p in cat.problems}
    assert set(reasons) == {"bomb", "small-alias", "desc-list", "name-map"}
    assert "anchors and aliases" in reasons["bomb"] and "anchors and aliases" in reasons["small-alias"]
    assert "description must be text" in reasons["desc-list"] and "name must be text" in reasons["name-map"]
    assert len(json.dumps([p.reason for p in cat.problems])) < 2000
    assert "bomb" not in index.prompt_part(hermes_home, None)


def _age(root: Path, seconds: float) -> None:
    """Every file and folder under ``root`` last changed ``seconds`` ago (past the loader's
    recent-change window, so its caches may keep what they read)."""
    import os
    import time

    t = time.time_ns() - int(seconds * 1e9)
    for p in [root, *root.rglob("*")]:
        os.utime(p, ns=(t, t))


def test_the_index_follows_skills_added_edited_and_removed_between_agents(hermes_home):
    root = hermes_home / "skills"
    bundled.ensure_installed(hermes_home)
    write_skill(root, "ops/backup", "name: backup\ndescription: Nightly backup routine.")
    _age(root, 60)
    first = index.prompt_part(hermes_home)
    assert "- backup: Nightly backup routine." in first
    assert index.prompt_part(hermes_home) == first  # unchanged tree, same text
    write_skill(root, "ops/restore", "name: restore\ndescription: Bring a backup back.")
    _age(root / "ops" / "restore", 50)  # even an added skill dated in the past is found
    assert "- restore: Bring a backup back." in index.prompt_part(hermes_home)
    (root / "ops" / "backup" / "SKILL.md").write_text(  # edited in place, a later mtime
        "---\nname: backup\ndescription: Hourly backup routine.\n---\nSteps.\n")
    _age(root / "ops" / "backup", 40)
    text = index.prompt_part(hermes_home)
    assert "Hourly backup routine." in text and "Nightly" not in text
    import shutil

    shutil.rmtree(root / "ops" / "restore")
    _age(root, 30)
    assert "restore" not in index.prompt_part(hermes_home)
    assert "- backup:" not in index.prompt_part(hermes_home, cfg(disabled=["backup"]))
    assert "skills_list shows their descriptions" in index.prompt_part(
        hermes_home, cfg(index_budget=60))  # the budget is part of what is cached


def test_an_edit_in_the_same_timestamp_tick_is_never_served_stale(hermes_home):
    """A rewrite of the same size within one filesystem timestamp tick leaves (mtime, size,
    inode) as they were: a SKILL.md changed that recently is read again, not taken from a cache
    (the front-matter cache served the old description here before)."""
    import os
    import time

    skill_md = write_skill(hermes_home / "skills", "notes",
                           "name: notes\ndescription: alpha one.") / "SKILL.md"
    t = time.time_ns()
    os.utime(skill_md, ns=(t, t))
    assert "- notes: alpha one." in index.prompt_part(hermes_home)
    assert loader.load(hermes_home).get("notes").description == "alpha one."
    skill_md.write_text(skill_md.read_text().replace("alpha one", "bravo two"))
    os.utime(skill_md, ns=(t, t))  # the same tick: nothing in the stat tells the edit apart
    assert "- notes: bravo two." in index.prompt_part(hermes_home)
    assert loader.load(hermes_home).get("notes").description == "bravo two."


def test_a_same_tick_edit_is_still_seen_once_the_tick_is_long_past(hermes_home):
    """Read within the tick of its mtime, rewritten in that same tick with no read between, and
    asked for again later: the stat alone would vouch for the old parse; the hash does not."""
    import os
    import time

    skill_md = write_skill(hermes_home / "skills", "notes",
                           "name: notes\ndescription: alpha one.") / "SKILL.md"
    t = time.time_ns()
    os.utime(skill_md, ns=(t, t))
    assert loader.load(hermes_home).get("notes").description == "alpha one."
    skill_md.write_text(skill_md.read_text().replace("alpha one", "bravo two"))
    os.utime(skill_md, ns=(t, t))
    time.sleep(SETTLE_NS / 1e9 + 0.1)  # the file's mtime is old now; its parse was not
    assert loader.load(hermes_home).get("notes").description == "bravo two."
    assert "- notes: bravo two." in index.prompt_part(hermes_home)


def test_a_new_process_rereads_what_the_disk_cache_parsed_within_the_tick(hermes_home):
    import os
    import time

    skill_md = write_skill(hermes_home / "skills", "notes",
                           "name: notes\ndescription: alpha one.") / "SKILL.md"
    t = time.time_ns()
    os.utime(skill_md, ns=(t, t))
    assert loader.load(hermes_home).get("notes").description == "alpha one."
    assert (hermes_home / "skills" / loader.CACHE_FILE).exists()  # what a new process reads
    skill_md.write_text(skill_md.read_text().replace("alpha one", "bravo two"))
    os.utime(skill_md, ns=(t, t))
    loader.clear_cache()  # this process forgets; the file on disk stays
    time.sleep(SETTLE_NS / 1e9 + 0.1)
    assert loader.load(hermes_home).get("notes").description == "bravo two."
