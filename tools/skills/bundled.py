"""The starter skills shipped with Hermes (package data in ``tools/skills/bundled/``), copied into
HERMES_HOME/skills on first use and recorded in ``skills/.bundled.json``.

The record keeps each installed copy's hash, so a newer Hermes updates a starter skill only while
the user's copy is unchanged; an edited copy is left alone, a removed one is not brought back. The
review never edits a bundled skill (``SkillStore`` with actor ``review``).
"""
from __future__ import annotations

import hashlib
import json
import logging
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from tools.skills import loader

log = logging.getLogger("hermes.skills")

SOURCE = Path(__file__).resolve().parent / "bundled"


def folder_hash(folder: Path) -> Optional[str]:
    """A hash of every file's relative path and bytes; None when the folder is missing."""
    if not folder.is_dir():
        return None
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts):
            h.update(p.relative_to(folder).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


@lru_cache(maxsize=1)
def shipped() -> dict[str, tuple[str, str]]:
    """name -> (folder relative to the bundle, hash) of the skills this version ships."""
    out = {}
    for skill_md in sorted(SOURCE.glob("*/*/SKILL.md")):
        rel = skill_md.parent.relative_to(SOURCE).as_posix()
        out[skill_md.parent.name] = (rel, folder_hash(skill_md.parent) or "")
    return out


@lru_cache(maxsize=1)
def bundle_version() -> str:
    return hashlib.sha256(json.dumps(shipped(), sort_keys=True).encode()).hexdigest()[:16]


def _read_manifest(root: Path) -> dict:
    try:
        data = json.loads((root / loader.BUNDLED_MANIFEST).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def ensure_installed(home: Path) -> list[str]:
    """Install or update the starter skills; returns the names written. Never raises: a home that
    cannot be written just goes without them (logged)."""
    root = loader.skills_dir(home)
    if _read_manifest(root).get("bundle") == bundle_version():
        return []
    try:
        return _install(root)
    except Exception as exc:  # noqa: BLE001 - starter skills are optional, the agent is not
        log.warning("could not install the bundled skills into %s: %s", root, exc)
        return []


def catalog(home: Path, config: Any = None) -> loader.Catalog:
    """The skills, the starter ones installed first if this is the first use of HERMES_HOME."""
    ensure_installed(home)
    return loader.load(home, config)


def _install(root: Path) -> list[str]:
    from tools.skills.store import atomic_write, copy_into, land, locked, remove_folder

    written = []
    with locked(root):
        manifest = _read_manifest(root)
        if manifest.get("bundle") == bundle_version():
            return []
        records = manifest.get("skills") if isinstance(manifest.get("skills"), dict) else {}
        for name, (rel, new_hash) in shipped().items():
            record = records.get(name)
            target = root / rel
            if record is None:
                if target.exists() or (root / name).exists():
                    records[name] = {"hash": None}  # the user's own skill by that name: not ours
                    continue
                land(root, target, lambda tmp, src=SOURCE / rel: copy_into(src, tmp))
            elif (isinstance(record, dict) and record.get("hash") and record.get("hash") != new_hash
                  and folder_hash(root / record.get("folder", rel)) == record["hash"]):
                # unchanged by the user: update
                remove_folder(root, root / record.get("folder", rel))
                land(root, target, lambda tmp, src=SOURCE / rel: copy_into(src, tmp))
            else:
                continue  # up to date, edited by the user, or removed by the user
            records[name] = {"hash": new_hash, "folder": rel}
            written.append(name)
        data = json.dumps({"bundle": bundle_version(), "skills": records}, indent=1, sort_keys=True)
        atomic_write(root / loader.BUNDLED_MANIFEST, data.encode("utf-8"))
    return written
