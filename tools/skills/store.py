"""Every write to the skills under HERMES_HOME/skills (the agent's tool, the review, the CLI).

Each write holds one lock file (``skills/.lock``) across processes, checks everything before
touching disk, keeps the previous version (``agent.skills.history``) and lands atomically: a new
skill is built in ``skills/.tmp/`` and renamed into place, a file is written to a temp file and
renamed over the old one. So two processes creating one skill give one success and one clear
error, and a refused or failed write leaves no partial files and loses nothing.
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path, PurePosixPath
from typing import Any, Callable, ContextManager, Optional

from hermes_core.locks import dir_lock
from hermes_core.files import atomic_write
from tools.skills import format as fmt
from tools.skills import history, loader, similar
from tools.skills.loader import Skill

LOCK_TIMEOUT = 10.0
TMP_DIR = ".tmp"
MAX_INSTALL_BYTES = 20_000_000
IGNORED = shutil.ignore_patterns(".git", "__pycache__", ".DS_Store")


class SkillStoreError(Exception):
    """A write was refused or failed; nothing on disk changed. The message says what to do."""


def locked(root: Path, timeout: float = LOCK_TIMEOUT) -> ContextManager[None]:
    """The skills root's lock: one writer at a time across processes and threads."""
    return dir_lock(root, timeout, SkillStoreError)


def support_path(skill_dir: Path, file_path: str, *, writing: bool) -> Path:
    """``file_path`` inside the skill folder, or SkillStoreError.

    Writes go to references/, templates/, scripts/ or assets/ only; nothing may leave the folder
    (``..``, absolute, symlinks)."""
    raw = (file_path or "").strip().replace("\\", "/")
    rel = PurePosixPath(raw)
    if not raw or rel.is_absolute() or ".." in rel.parts or raw.startswith("~"):
        raise SkillStoreError(f"file_path {file_path!r} must be a relative path inside the skill "
                              f"folder, e.g. references/notes.md")
    if writing and (len(rel.parts) < 2 or rel.parts[0] not in fmt.SUPPORT_DIRS):
        raise SkillStoreError(f"file_path {file_path!r}: supporting files go under "
                              f"{', '.join(d + '/' for d in fmt.SUPPORT_DIRS)} (SKILL.md itself: "
                              "action edit or patch)")
    target = skill_dir / Path(*rel.parts)
    base = skill_dir.resolve()
    resolved = target.resolve()
    if resolved != base and base not in resolved.parents:
        raise SkillStoreError(f"file_path {file_path!r} leads outside the skill folder")
    return target


def _text(content: Any, what: str) -> str:
    if not isinstance(content, str):
        raise SkillStoreError(f"{what} must be text")
    data = content.encode("utf-8", "surrogatepass")
    if not fmt.is_text(data):
        raise SkillStoreError(f"{what} looks binary (NUL or control bytes); "
                              "skills hold text files only")
    if len(data) > fmt.MAX_FILE_BYTES:
        raise SkillStoreError(f"{what} is {fmt.human_size(len(data))}; the limit is "
                              f"{fmt.human_size(fmt.MAX_FILE_BYTES)}")
    return content


class SkillStore:
    """Writes by one actor: ``agent`` (the skill_manage tool), ``review`` (never edits bundled
    skills) or ``cli``."""

    def __init__(self, home: Path, config: Any = None, actor: str = "agent") -> None:
        self.home = Path(home)
        self.config = config
        self.actor = actor
        self.root = loader.skills_dir(self.home)

    # ---- lookups -----------------------------------------------------------------------
    def _all(self) -> list[Skill]:
        cat = loader.load(self.home, self.config)
        return cat.skills + [s for s, _ in cat.skipped]

    def find(self, name: str) -> Skill:
        """The skill called ``name`` (disabled ones too), or an error naming close matches."""
        skills = self._all()
        for s in skills:
            if s.name == name:
                return s
        close = similar.close_names(name, [s.name for s in skills])
        listing = "`hermes skills list`" if self.actor == "cli" else "skills_list"
        hint = f"; did you mean {', '.join(close)}?" if close else f"; {listing} shows the skills"
        raise SkillStoreError(f"no skill named {name!r}{hint}")

    def _editable(self, name: str) -> Skill:
        skill = self.find(name)
        if not skill.writable:
            raise SkillStoreError(f"{name!r} comes from {skill.root}, "
                                  "a read-only skills.external_dirs root; "
                                  "copy it with `hermes skills install` to change it")
        if skill.bundled and self.actor == "review":
            raise SkillStoreError(f"{name!r} is a bundled skill; "
                                  "the review does not edit bundled skills")
        return skill

    # ---- writes ------------------------------------------------------------------------
    def create(self, name: str, content: str, category: Optional[str] = None) -> Path:
        problem = fmt.name_problem(name)
        if problem:
            raise SkillStoreError(problem)
        if category is not None and (category == "" or fmt.name_problem(category)):
            raise SkillStoreError(f"invalid category {category!r}: one folder name in lowercase "
                                  "letters, digits, '.', '_' or '-'")
        meta = self._checked(_text(content, "content"), name)
        with locked(self.root):
            skills = self._all()
            if any(s.name == name for s in skills):
                raise SkillStoreError(f"a skill named {name!r} already exists; "
                                      "change it with action patch or edit")
            dup = similar.near_duplicate(name, meta.description,
                                         [(s.name, s.description) for s in skills])
            if dup:
                raise SkillStoreError(f"skill {dup[0]!r} already covers this ({dup[1]}); "
                                      "patch that one instead: "
                                      f"skill_manage(action='patch', name='{dup[0]}', ...)")
            target = self.root / category / name if category else self.root / name
            if target.exists():
                raise SkillStoreError(f"{target} already exists (a skill that does not load: "
                                      "`hermes doctor` says why); fix or remove it first")
            land(self.root, target,
                 lambda tmp: (tmp / "SKILL.md").write_text(content, encoding="utf-8"))
            history.save(self.root, name, None, "create", self.actor)
        return target

    def patch(self, name: str, old: str, new: str, file_path: Optional[str] = None) -> Path:
        if not isinstance(old, str) or not old:
            raise SkillStoreError("patch needs old_string: the exact text to replace")
        if not isinstance(new, str):
            raise SkillStoreError("patch needs new_string (may be empty to delete the text)")
        with locked(self.root):
            skill = self._editable(name)
            on_skill_md = file_path in (None, "", "SKILL.md")
            path = (skill.skill_md if on_skill_md
                    else support_path(skill.path, file_path, writing=True))
            try:
                text = loader.read_text(path)
            except FileNotFoundError:
                raise SkillStoreError(f"{name} has no file {file_path!r}") from None
            except fmt.SkillFormatError as exc:
                raise SkillStoreError(str(exc)) from None
            count = text.count(old)
            if count == 0:
                raise SkillStoreError(f"old_string was not found in {path.name}; "
                                      "skill_view shows the current text "
                                      "(whitespace must match exactly)")
            if count > 1:
                raise SkillStoreError(f"old_string matches {count} places in {path.name}; "
                                      "include more surrounding text so it matches exactly one")
            updated = text.replace(old, new, 1)
            if path == skill.skill_md:
                self._checked(updated, name)
            else:
                _text(updated, file_path or "the file")
            history.save(self.root, name, skill.path, "patch", self.actor)
            atomic_write(path, updated.encode("utf-8"))
        return path

    def edit(self, name: str, content: str) -> Path:
        self._checked(_text(content, "content"), name)
        with locked(self.root):
            skill = self._editable(name)
            history.save(self.root, name, skill.path, "edit", self.actor)
            atomic_write(skill.skill_md, content.encode("utf-8"))
        return skill.skill_md

    def write_file(self, name: str, file_path: str, content: str) -> Path:
        data = _text(content, "file_content").encode("utf-8")
        with locked(self.root):
            skill = self._editable(name)
            path = support_path(skill.path, file_path, writing=True)
            history.save(self.root, name, skill.path, "write_file", self.actor)
            atomic_write(path, data)
        return path

    def remove_file(self, name: str, file_path: str) -> Path:
        with locked(self.root):
            skill = self._editable(name)
            path = support_path(skill.path, file_path, writing=True)
            if not path.is_file():
                raise SkillStoreError(f"{name} has no file {file_path!r}; "
                                      "skill_view lists its files")
            history.save(self.root, name, skill.path, "remove_file", self.actor)
            path.unlink()
        return path

    def delete(self, name: str) -> Path:
        with locked(self.root):
            skill = self._editable(name)
            history.save(self.root, name, skill.path, "delete", self.actor)
            remove_folder(self.root, skill.path)
        return skill.path

    def revert(self, name: str, number: Optional[int] = None) -> history.Version:
        """Restore version ``number`` (the latest when None); the current state is saved first."""
        with locked(self.root):
            version = history.find(self.root, name, number)
            if version is None:
                raise SkillStoreError(f"no saved version {number} of {name!r}; "
                                      f"`hermes skills history {name}` lists them"
                                      if number else f"{name!r} has no saved versions")
            current = next((s for s in self._all() if s.name == name and s.writable), None)
            if current is None and version.absent:
                raise SkillStoreError(f"{name!r} does not exist now, "
                                      f"as in version {version.number}")
            history.save(self.root, name, current.path if current else None, "revert", self.actor)
            if current is not None:
                remove_folder(self.root, current.path)
            if not version.absent:
                target = self.root / version.folder  # type: ignore[operator]
                land(self.root, target, lambda tmp: copy_into(version.files_dir, tmp))
        return version

    def install(self, source: Path, category: Optional[str] = None, force: bool = False) -> Path:
        """Copy a skill folder (or its SKILL.md's folder) into HERMES_HOME/skills."""
        src = Path(source).expanduser()
        src = src.parent if src.name == "SKILL.md" else src
        if not src.exists():
            raise SkillStoreError(f"{src} does not exist; give the path of a skill folder (one "
                                  "holding a SKILL.md)")
        if not (src / "SKILL.md").is_file():
            raise SkillStoreError(f"{src} has no SKILL.md; point at a skill folder")
        try:
            meta = loader.read_meta(src / "SKILL.md")
        except (fmt.SkillFormatError, OSError) as exc:
            raise SkillStoreError(f"{src / 'SKILL.md'}: {exc}") from None
        name = meta.name or src.name
        problem = fmt.name_problem(name) or (fmt.name_problem(category) if category else None)
        if problem:
            raise SkillStoreError(problem)
        size = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
        if size > MAX_INSTALL_BYTES:
            raise SkillStoreError(f"{src} holds {fmt.human_size(size)}; a skill may hold at most "
                                  f"{fmt.human_size(MAX_INSTALL_BYTES)}")
        with locked(self.root):
            current = next((s for s in self._all() if s.name == name and s.writable), None)
            target = self.root / category / name if category else (
                current.path if current else self.root / name)
            if current is not None and not force:
                raise SkillStoreError(f"a skill named {name!r} is already installed at "
                                      f"{current.path}; add --force to replace it "
                                      "(the old one is kept in its history)")
            if current is None and target.exists():
                raise SkillStoreError(f"{target} already exists and is not a loadable skill; "
                                      "move it aside")
            history.save(self.root, name, current.path if current else None, "install", self.actor)
            if current is not None:
                remove_folder(self.root, current.path)
            land(self.root, target, lambda tmp: copy_into(src, tmp))
        return target

    # ---- helpers -------------------------------------------------------------------------
    @staticmethod
    def _checked(text: str, name: str) -> fmt.SkillMeta:
        try:
            return fmt.check_skill_text(text, name)
        except fmt.SkillFormatError as exc:
            raise SkillStoreError(f"SKILL.md refused: {exc}") from None


def _tmp(root: Path) -> Path:
    """A fresh path under ``root/.tmp`` (leftovers of crashed writes older than an hour go)."""
    base = root / TMP_DIR
    base.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for old in base.iterdir():
        try:
            if now - old.lstat().st_mtime > 3600:
                shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink()
        except OSError:
            pass
    return base / f"{os.getpid()}-{os.urandom(4).hex()}"


def land(root: Path, target: Path, fill: Callable[[Path], Any]) -> None:
    """All or nothing: build a folder with ``fill(tmp)`` in root/.tmp, then rename it to
    ``target``."""
    tmp = _tmp(root)
    tmp.mkdir(mode=0o700)
    try:
        fill(tmp)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SkillStoreError(f"could not write {target}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def remove_folder(root: Path, folder: Path) -> None:
    """Move ``folder`` out of sight at once, then delete it (and its emptied category folder)."""
    gone = _tmp(root)
    os.rename(folder, gone)
    shutil.rmtree(gone, ignore_errors=True)
    parent = folder.parent
    if parent != root and parent.parent == root:
        try:
            parent.rmdir()
        except OSError:
            pass


def copy_into(src: Path, dest: Path) -> None:
    """Copy a skill folder's contents (symlinks as links; .git and caches left out)."""
    for item in src.iterdir():
        if IGNORED(str(src), [item.name]):
            continue
        if item.is_dir() and not item.is_symlink():
            shutil.copytree(item, dest / item.name, symlinks=True, ignore=IGNORED)
        else:
            shutil.copy2(item, dest / item.name, follow_symlinks=False)
