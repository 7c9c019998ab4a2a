"""Finding skills: ``HERMES_HOME/skills/[<category>/]<name>/SKILL.md`` and ``skills.external_dirs``.

A skill that cannot be used (front matter that is not YAML, a 10 MB SKILL.md, not UTF-8) is
skipped and kept as a ``Problem`` for ``hermes doctor`` and ``hermes skills list``: one broken
folder never hides the others or stops the agent. Parsed front matter is cached per file
(mtime, size), so a gateway building many prompts reads each SKILL.md once.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional, Union

from hermes_core.files import settled
from tools.skills import format as fmt

BUNDLED_MANIFEST = ".bundled.json"
MAX_DEPTH = 4  # root/<category>/<sub>/<name>/SKILL.md at most


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    category: Optional[str]
    path: Path  # the skill's folder
    root: Path  # the skills root it was found under
    writable: bool  # under HERMES_HOME/skills (external roots are read-only)
    bundled: bool = False  # a starter skill shipped with Hermes (the review never edits it)
    meta: Optional[fmt.SkillMeta] = field(default=None, compare=False, repr=False)

    @property
    def skill_md(self) -> Path:
        return self.path / "SKILL.md"

    def files(self) -> list[str]:
        """Supporting files, relative to the folder, sorted (SKILL.md and hidden files left out)."""
        out = []
        for dirpath, dirnames, filenames in os.walk(self.path):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for f in filenames:
                rel = os.path.relpath(os.path.join(dirpath, f), self.path)
                if not f.startswith(".") and rel != "SKILL.md":
                    out.append(rel.replace(os.sep, "/"))
        return sorted(out)


@dataclass(frozen=True)
class Problem:
    path: Path
    reason: str

    def line(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass
class Catalog:
    """The usable skills (sorted by category, then name), the ones left out, and the broken ones."""

    skills: list[Skill]
    # (skill, why: disabled, other OS)
    skipped: list[tuple[Skill, str]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def get(self, name: str) -> Optional[Skill]:
        for s in self.skills:
            if s.name == name:
                return s
        return None

    def names(self) -> list[str]:
        return [s.name for s in self.skills]


def skills_dir(home: Path) -> Path:
    return Path(home) / "skills"


def _section(config: Any) -> Any:
    return getattr(config, "skills", None)


def roots(home: Path, config: Any = None) -> list[tuple[Path, bool]]:
    """(root, writable): HERMES_HOME/skills, then each external dir (relative to HERMES_HOME)."""
    out = [(skills_dir(home), True)]
    for raw in getattr(_section(config), "external_dirs", None) or ():
        p = Path(os.path.expandvars(str(raw))).expanduser()
        p = p if p.is_absolute() else Path(home) / p
        if all(p.resolve() != r.resolve() for r, _ in out):
            out.append((p, False))
    return out


def bundled_names(root: Path) -> dict[str, Any]:
    """Name -> record of the starter skills installed in ``root`` (see ``tools.skills.bundled``)."""
    try:
        data = json.loads((root / BUNDLED_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    skills = data.get("skills") if isinstance(data, dict) else None
    return skills if isinstance(skills, dict) else {}


def _walk(root: str) -> Iterator[tuple[str, Optional[str], os.stat_result]]:
    """(folder, category, stat of its SKILL.md) of every skill under ``root``, in sorted order.
    Hidden folders are skipped, and a skill's own subfolders are its files, not more skills."""
    return _visit(root, ())


def _visit(folder: str,
           rel: tuple[str, ...]) -> Iterator[tuple[str, Optional[str], os.stat_result]]:
    # a module function, not a nested one: a recursive closure is a reference cycle per walk
    try:
        with os.scandir(folder) as it:
            subdirs = sorted(e.name for e in it if not e.name.startswith(".") and e.is_dir())
    except OSError:
        return
    for name in subdirs:
        sub = os.path.join(folder, name)
        try:
            st = os.stat(os.path.join(sub, "SKILL.md"))
        except OSError:
            if len(rel) + 1 < MAX_DEPTH:
                yield from _visit(sub, rel + (name,))
            continue
        yield sub, "/".join(rel) or None, st


def stamp(home: Path, config: Any = None) -> Optional[tuple]:
    """What ``load`` reads, cheaply: every root's skill folders with their SKILL.md (mtime,
    size, inode), the starter-skills manifest's, and the config that filters them; equal stamps
    mean an equal catalog. None when a file is not ``settled`` yet: a second edit in the same
    filesystem timestamp tick, at the same size, would look unchanged."""
    section = _section(config)
    now = time.time_ns()
    parts: list[Any] = [tuple(getattr(section, "disabled", None) or ()), sys.platform]
    for root, writable in roots(home, config):
        found = [(folder, category, st.st_mtime_ns, st.st_size, st.st_ino)
                 for folder, category, st in _walk(str(root))]
        try:
            st = os.stat(root / BUNDLED_MANIFEST) if writable else None
        except OSError:
            st = None
        manifest = (st.st_mtime_ns, st.st_size, st.st_ino) if st is not None else None
        if not all(settled(row[2], now) for row in found) or (
                manifest and not settled(manifest[0], now)):
            return None
        parts.append((str(root), writable, manifest, tuple(found)))
    return tuple(parts)


# Parsed front matter per SKILL.md path, valid while (mtime, size) match. Kept in memory and in
# skills/.cache.json, so a new process (`hermes -z`) does not parse a thousand YAML headers again.
_Entry = tuple[tuple[int, int], Union[fmt.SkillMeta, str]]
_cache: dict[str, _Entry] = {}
_cache_lock = threading.Lock()
_disk_loaded: set[str] = set()
_skills: dict[tuple, Skill] = {}  # built Skill objects, reused while nothing about them changed
_racy: dict[str, bytes] = {}  # hash of the bytes of a parse not yet ``settled``
CACHE_FILE = ".cache.json"


def clear_cache() -> None:
    """Forget every parsed front matter, on disk too (benchmarks of the cold path)."""
    with _cache_lock:
        _cache.clear()
        _racy.clear()
        _disk_loaded.clear()
        _skills.clear()


def _load_disk_cache(path: Path) -> None:
    key = str(path)
    if key in _disk_loaded:
        return
    _disk_loaded.add(key)
    try:
        saved = os.stat(path).st_mtime_ns  # written just after its parses
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    for skill_md, row in (data.items() if isinstance(data, dict) else ()):
        try:
            (mtime, size, raw, error) = row
            entry = error if isinstance(error, str) else fmt.meta_from_raw(raw)
            if skill_md not in _cache:
                _cache[skill_md] = ((int(mtime), int(size)), entry)
                if not settled(int(mtime), saved):  # parsed within the tick: read it again
                    _racy[skill_md] = b""
        except (TypeError, ValueError, AttributeError):
            continue


def _save_disk_cache(path: Path, paths: list[str]) -> None:
    with _cache_lock:
        rows = {p: [*_cache[p][0], None if isinstance(_cache[p][1], str) else _cache[p][1].raw,
                    _cache[p][1] if isinstance(_cache[p][1], str) else None]
                for p in paths if p in _cache}
    try:
        from hermes_core.files import atomic_write

        atomic_write(path, json.dumps(rows, default=str).encode("utf-8"))
    except OSError:
        pass  # only a cache


def _meta(skill_md: str, st: os.stat_result) -> tuple[Union[fmt.SkillMeta, str], bool]:
    """(front matter or the reason it cannot be used, parsed now). A read not ``settled``
    (too soon after the file's mtime) may miss a second same-size write in that timestamp tick:
    such an entry is checked by a hash of the bytes (a cheap read, not a YAML parse) until a
    read after the tick confirms it; the others by (mtime, size)."""
    stamp = (st.st_mtime_ns, st.st_size)
    recent = not settled(st.st_mtime_ns, time.time_ns())  # the clock before the read below
    with _cache_lock:
        hit = _cache.get(skill_md)
        racy = _racy.get(skill_md)
    if hit is not None and hit[0] == stamp and racy is None:
        return hit[1], False
    result: Union[fmt.SkillMeta, str]
    digest = None
    try:
        if st.st_size > fmt.MAX_SKILL_BYTES:  # depends on the size alone: never racy
            raise fmt.SkillFormatError(f"SKILL.md is {fmt.human_size(st.st_size)}; the limit is "
                                       f"{fmt.human_size(fmt.MAX_SKILL_BYTES)} "
                                       "(move detail into references/)")
        data = Path(skill_md).read_bytes()
        digest = hashlib.blake2b(data, digest_size=16).digest()
        if hit is not None and hit[0] == stamp and racy == digest:
            if not recent:
                with _cache_lock:
                    _racy.pop(skill_md, None)  # read after the tick: the stat suffices now
            return hit[1], False
        result = fmt.parse(decode_text(data, Path(skill_md).name))[0]
    except fmt.SkillFormatError as exc:
        result = str(exc)
    except OSError as exc:
        return f"cannot read it ({exc.strerror})", False  # not cached: it may be readable next time
    with _cache_lock:
        _cache[skill_md] = (stamp, result)
        if recent and digest is not None:
            _racy[skill_md] = digest
        else:
            _racy.pop(skill_md, None)
    return result, True


def read_meta(skill_md: Path) -> fmt.SkillMeta:
    """One SKILL.md's front matter; raises SkillFormatError (size, encoding, YAML) or OSError."""
    result, _ = _meta(str(skill_md), os.stat(skill_md))
    if isinstance(result, str):
        raise fmt.SkillFormatError(result)
    return result


def read_text(path: Path) -> str:
    """A skill file as text; SkillFormatError when it is not UTF-8."""
    return decode_text(path.read_bytes(), path.name)


def decode_text(data: bytes, name: str) -> str:
    """``data`` as UTF-8 text; SkillFormatError naming ``name`` and the line when it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise fmt.SkillFormatError(f"{name} is not UTF-8 text (line {line})") from None


def load(home: Path, config: Any = None, *, platform: Optional[str] = None) -> Catalog:
    """Every skill under the roots. The first root holding a name wins; later copies are problems.
    ``platform`` is ``sys.platform`` by default (the ``platforms`` front-matter filter)."""
    section = _section(config)
    disabled = set(getattr(section, "disabled", None) or ())
    cat = Catalog(skills=[])
    seen: dict[str, str] = {}
    cache_file = skills_dir(home) / CACHE_FILE
    with _cache_lock:
        _load_disk_cache(cache_file)
    visited: list[str] = []
    used: list[tuple] = []
    fresh = False
    for root, writable in roots(home, config):
        bundled = ({n for n, r in bundled_names(root).items()
                    if isinstance(r, dict) and r.get("hash")} if writable else set())
        for folder, category, st in _walk(str(root)):
            skill_md = os.path.join(folder, "SKILL.md")
            meta, parsed = _meta(skill_md, st)
            visited.append(skill_md)
            fresh = fresh or parsed
            if isinstance(meta, str):
                cat.problems.append(Problem(Path(skill_md), f"{meta}; the skill is skipped"))
                continue
            name = meta.name or os.path.basename(folder)
            problem = fmt.name_problem(name)
            if problem:
                cat.problems.append(Problem(Path(skill_md), f"{problem}; the skill is skipped"))
                continue
            if name in seen:
                cat.problems.append(Problem(Path(skill_md),
                                            f"another skill named {name!r} is already "
                                            f"loaded from {seen[name]}; this copy is skipped"))
                continue
            seen[name] = folder
            key = (skill_md, st.st_mtime_ns, st.st_size, category, root, writable, name in bundled)
            used.append(key)
            skill = None if parsed else _skills.get(key)  # parsed now: the text may be new
            if skill is None:
                skill = _skills[key] = Skill(name, meta.description, category, Path(folder), root,
                                             writable, bundled=name in bundled, meta=meta)
            if name in disabled:
                cat.skipped.append((skill, "disabled in skills.disabled"))
            elif not fmt.runs_here(meta, platform or sys.platform):
                cat.skipped.append((skill, f"only for {', '.join(meta.platforms)}"))
            else:
                cat.skills.append(skill)
    if fresh and cache_file.parent.is_dir():
        _save_disk_cache(cache_file, visited)
    if len(_skills) > 2 * len(used) + 100:  # edited or removed skills: drop their old objects
        keep = {k: _skills[k] for k in used if k in _skills}
        _skills.clear()
        _skills.update(keep)
    cat.skills.sort(key=lambda s: (s.category or "", s.name))
    return cat
