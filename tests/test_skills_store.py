"""Writing skills on real folders: every action, the versions kept before each write and revert, and
bad input (path escapes, binary files, ambiguous patches, duplicates, read-only roots, two
processes creating one skill at once) refused with a clear error, no partial files, nothing lost."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_core.config import HermesConfig
from tools.skills import bundled, history, loader
from tools.skills.store import SkillStore, SkillStoreError, locked
from tests.test_skills_loader import write_skill

ROOT = Path(__file__).resolve().parents[1]


def skill_md(name: str, desc: str = "Deploy the app to staging.", body: str = "1. build\n2. ship\n") -> str:
    return f"---\nname: {name}\ndescription: {desc}\n---\n# {name}\n{body}"


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under the skills root except the lock, for "nothing changed" assertions."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name not in (".lock", ".cache.json")}


def no_leftovers(root: Path) -> bool:
    tmp = root / ".tmp"
    return (not tmp.exists() or not any(tmp.iterdir())) and not list(root.rglob(".*.tmp"))


@pytest.fixture
def store(hermes_home) -> SkillStore:
    return SkillStore(hermes_home)


def test_create_patch_edit_files_delete_and_revert_each(store, hermes_home):
    root = hermes_home / "skills"
    path = store.create("deploy", skill_md("deploy"), category="devops")
    assert path == root / "devops" / "deploy" and loader.load(hermes_home).get("deploy").category == "devops"
    store.patch("deploy", "2. ship", "2. ship\n3. smoke-test")
    store.write_file("deploy", "references/hosts.md", "staging: 10.0.0.1\n")
    store.patch("deploy", "10.0.0.1", "10.0.0.2", file_path="references/hosts.md")
    store.remove_file("deploy", "references/hosts.md")
    store.edit("deploy", skill_md("deploy", body="Just run make deploy.\n"))
    assert "make deploy" in (path / "SKILL.md").read_text() and not (path / "references" / "hosts.md").exists()
    store.delete("deploy")
    assert not path.exists() and not (root / "devops").exists() and no_leftovers(root)

    actions = [(v.number, v.action, v.absent) for v in history.versions(root, "deploy")]
    assert actions == [(1, "create", True), (2, "patch", False), (3, "write_file", False),
                       (4, "patch", False), (5, "remove_file", False), (6, "edit", False),
                       (7, "delete", False)]
    store.revert("deploy")  # undo the delete
    assert "make deploy" in (path / "SKILL.md").read_text()
    store.revert("deploy", 4)  # the state before the second patch: hosts.md with the old address
    assert (path / "references" / "hosts.md").read_text() == "staging: 10.0.0.1\n"
    assert "3. smoke-test" in (path / "SKILL.md").read_text()
    store.revert("deploy", 1)  # before it was created: gone again
    assert loader.load(hermes_home).get("deploy") is None
    store.revert("deploy")  # and back: reverts are versions too
    assert (path / "references" / "hosts.md").is_file()
    with pytest.raises(SkillStoreError, match="no saved version 99"):
        store.revert("deploy", 99)


@pytest.mark.parametrize("call, words", [
    (lambda s: s.create("../evil", skill_md("../evil")), "invalid name"),
    (lambda s: s.create("Evil", skill_md("evil")), "invalid name"),
    (lambda s: s.create("ok", skill_md("other")), "must match"),
    (lambda s: s.create("ok", "no front matter"), "no front matter"),
    (lambda s: s.create("ok", "---\nname: ok\ndescription: [x\n---\nbody"), "not valid YAML"),
    (lambda s: s.create("ok", skill_md("ok") + "x" * 10_000_000), "limit"),
    (lambda s: s.create("ok", skill_md("ok"), category="../up"), "invalid category"),
    (lambda s: s.create("base", skill_md("base", "Something else entirely.")), "already exists"),
    (lambda s: s.create("bases", skill_md("bases", "Whatever.")), "already covers this"),
    (lambda s: s.create("other", skill_md("other", "Deploy the app to the staging servers.")),
     "already covers this"),
    (lambda s: s.write_file("base", "../../escape.md", "x"), "relative path inside"),
    (lambda s: s.write_file("base", "/etc/passwd", "x"), "relative path inside"),
    (lambda s: s.write_file("base", "notes.md", "x"), "supporting files go under"),
    (lambda s: s.write_file("base", "SKILL.md", "x"), "supporting files go under"),
    (lambda s: s.write_file("base", "assets/logo.png", "\x89PNG\r\n\x1a\n\x00\x00\x00"), "looks binary"),
    (lambda s: s.write_file("base", "references/big.md", "x" * 1_000_001), "limit"),
    (lambda s: s.write_file("base", "references/link/x.md", "x"), "leads outside"),
    (lambda s: s.patch("base", "step", "STEP"), "matches 2 places"),
    (lambda s: s.patch("base", "not there", "x"), "was not found"),
    (lambda s: s.patch("base", "# base", "# base\n---\nname: [broken"), None),  # body text: fine
    (lambda s: s.patch("base", "name: base", "name: renamed"), "cannot be renamed"),
    (lambda s: s.patch("base", "description: Deploy the app to staging.", "description:"), "no description"),
    (lambda s: s.edit("base", "---\nname: base\n---\nno description"), "no description"),
    (lambda s: s.remove_file("base", "references/missing.md"), "has no file"),
    (lambda s: s.delete("bsae"), "did you mean base"),
])
def test_bad_writes_are_refused_and_change_nothing(store, hermes_home, tmp_path, call, words):
    root = hermes_home / "skills"
    store.create("base", skill_md("base", body="step one\nstep two\n"))
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "base" / "references-link")
    (root / "base" / "references").mkdir()
    os.symlink(outside, root / "base" / "references" / "link")
    before = snapshot(root)
    if words is None:
        call(store)
        return
    with pytest.raises(SkillStoreError, match=words):
        call(store)
    assert snapshot(root) == before and no_leftovers(root)
    assert list(outside.iterdir()) == [] and not (tmp_path / "escape.md").exists()


def test_read_only_roots_and_bundled_skills_under_the_review(hermes_home, tmp_path):
    ext = tmp_path / "ext"
    write_skill(ext, "team", "name: team\ndescription: Team routine.")
    cfg = HermesConfig.model_validate({"skills": {"external_dirs": [str(ext)]}})
    bundled.ensure_installed(hermes_home)
    with pytest.raises(SkillStoreError, match="read-only"):
        SkillStore(hermes_home, cfg).patch("team", "Steps", "More steps")
    review = SkillStore(hermes_home, cfg, actor="review")
    with pytest.raises(SkillStoreError, match="bundled skill"):
        review.patch("debugging", "Reproduce", "Repro")
    SkillStore(hermes_home, cfg).patch("debugging", "**Reproduce.**", "**Reproduce first.**")  # the user's agent may
    assert "Reproduce first" in (hermes_home / "skills/software-development/debugging/SKILL.md").read_text()
    assert (ext / "team" / "SKILL.md").read_text().endswith("Steps.\n")


_RACER = """
import json, sys
from pathlib import Path
from tools.skills.store import SkillStore, SkillStoreError
home, body = Path(sys.argv[1]), sys.argv[2]
text = "---\\nname: racer\\ndescription: Who wins the race.\\n---\\n" + body + "\\n"
print("ready", flush=True)
try:
    SkillStore(home).create("racer", text)
    print(json.dumps({"ok": True}))
except SkillStoreError as exc:
    print(json.dumps({"ok": False, "error": str(exc)}))
"""


def test_two_processes_creating_one_skill_one_wins_one_clear_error(hermes_home):
    root = hermes_home / "skills"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with locked(root):  # both get past their checks and wait on the lock together
        procs = [subprocess.Popen([sys.executable, "-c", _RACER, str(hermes_home), f"body {i}"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
    results = [json.loads(p.communicate(timeout=60)[0].strip()) for p in procs]
    assert sorted(r["ok"] for r in results) == [False, True]
    loser = next(r for r in results if not r["ok"])
    assert "already exists" in loser["error"]
    text = (root / "racer" / "SKILL.md").read_text()
    assert text.endswith("body 0\n") or text.endswith("body 1\n")
    assert [p.name for p in root.iterdir() if not p.name.startswith(".")] == ["racer"]
    assert no_leftovers(root)


def test_install_and_remove_from_the_cli_side(hermes_home, tmp_path):
    src = write_skill(tmp_path / "downloads", "pdf-tools",
                      "name: pdf-tools\ndescription: Work with PDFs.\nlicense: MIT",
                      files={"scripts/extract.py": "print('x')\n", "assets/icon.png": b"\x89PNG\x00"})
    (src / ".git").mkdir()
    (src / ".git" / "HEAD").write_text("ref")
    cli = SkillStore(hermes_home, actor="cli")
    path = cli.install(src / "SKILL.md", category="documents")
    assert path == hermes_home / "skills/documents/pdf-tools"
    assert (path / "assets/icon.png").read_bytes() == b"\x89PNG\x00" and not (path / ".git").exists()
    with pytest.raises(SkillStoreError, match="--force"):
        cli.install(src)
    (src / "SKILL.md").write_text((src / "SKILL.md").read_text().replace("Work with", "Handle"))
    cli.install(src, force=True)
    assert loader.load(hermes_home).get("pdf-tools").description == "Handle PDFs."
    cli.delete("pdf-tools")
    cli.revert("pdf-tools")
    assert loader.load(hermes_home).get("pdf-tools").description == "Handle PDFs."
    with pytest.raises(SkillStoreError, match="has no SKILL.md"):
        cli.install(tmp_path)
