"""SKILL.md: YAML front matter between ``---`` lines, then Markdown.

Pure: text in, data or error out. The format is the public Agent Skills one (``name``,
``description``, optional ``version``, ``license``, ``platforms``, ``metadata.hermes.tags`` …;
unknown keys are kept and ignored), so a skill written for another agent parses unchanged. Reading
is lenient (a long description is shortened for display); writing by the agent is strict
(``check_skill_text``).
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any, Optional


NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_SKILL_BYTES = 200_000  # SKILL.md; longer material belongs in references/
MAX_FILE_BYTES = 1_000_000  # one supporting file
SUPPORT_DIRS = ("references", "templates", "scripts", "assets")
_OS_NAMES = {"macos": "darwin", "darwin": "darwin", "osx": "darwin", "linux": "linux",
             "windows": "win32", "win32": "win32"}


class SkillFormatError(ValueError):
    """SKILL.md cannot be used; the message says what is wrong and where."""


@dataclass(frozen=True)
class SkillMeta:
    """The front matter, with the fields Hermes uses pulled out."""

    name: Optional[str]
    description: str
    raw: dict = field(compare=False)

    @property
    def platforms(self) -> list[str]:
        value = self.raw.get("platforms")
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)):
            return []  # junk here means "no restriction", like no list at all
        return [v.strip().lower() for v in value if isinstance(v, str) and v.strip()]

    @property
    def tags(self) -> list[str]:
        return _str_list(_hermes_meta(self.raw).get("tags"))

    @property
    def related(self) -> list[str]:
        return _str_list(_hermes_meta(self.raw).get("related_skills"))


def _hermes_meta(raw: dict) -> dict:
    meta = raw.get("metadata")
    hermes = meta.get("hermes") if isinstance(meta, dict) else None
    return hermes if isinstance(hermes, dict) else {}


def _str_list(value: Any) -> list[str]:
    if isinstance(value, str):
        value = [v for v in re.split(r"[,\s]+", value) if v]
    if not isinstance(value, (list, tuple)):
        return []
    return [str(v) for v in value if isinstance(v, (str, int, float)) and not isinstance(v, bool)]


def split_front_matter(text: str) -> tuple[str, str]:
    """(YAML text, body). Raises SkillFormatError when the file does not start with front matter."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise SkillFormatError("no front matter: SKILL.md must start with a '---' line, then "
                               "name: and description:, then '---'")
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1:])
    raise SkillFormatError("the front matter is not closed: add a '---' line after it")


ALIASES_REFUSED = ("the front matter uses YAML anchors or aliases (&name / *name); Hermes refuses "
                   "anchors and aliases (a few bytes of them can stand for gigabytes): write the "
                   "values out")


def _yaml() -> tuple[Any, Any]:
    """PyYAML and its fastest safe loader, imported with the first SKILL.md parsed: every agent
    loads the skills plugin, and one without skills (nor a config.yaml) never needs it (~13 ms)."""
    import yaml

    return yaml, getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _refuse_aliases(head: str) -> None:
    """Anchors and aliases are what an alias bomb is made of (469 bytes standing for 4x10^9
    characters); no skill needs them, so the event stream is checked before anything is built."""
    yaml, loader = _yaml()
    for event in yaml.parse(head, Loader=loader):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise SkillFormatError(ALIASES_REFUSED)


def parse(text: str) -> tuple[SkillMeta, str]:
    """(front matter, body) of a SKILL.md."""
    head, body = split_front_matter(text)
    yaml, loader = _yaml()
    try:
        _refuse_aliases(head)
        data = yaml.load(head, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid syntax"
        raise SkillFormatError(f"the front matter is not valid YAML{where} ({problem})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SkillFormatError(f"the front matter must be a mapping (name: ..., description: ...), "
                               f"not {type(data).__name__}")
    return meta_from_raw(data), body


def _scalar_text(data: dict, key: str) -> Optional[str]:
    """A field Hermes shows as text: a string (or a number) only; anything else is refused before
    it is turned into text (a nested value could be huge)."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise SkillFormatError(f"the front matter's {key} must be text, not {type(value).__name__}")
    return str(value)


def meta_from_raw(data: dict) -> SkillMeta:
    """SkillMeta of a parsed front-matter mapping (also rebuilt from the loader's disk cache)."""
    name, desc = _scalar_text(data, "name"), _scalar_text(data, "description")
    return SkillMeta(name=name.strip() if name is not None else None,
                     description=" ".join(desc.split()) if desc is not None else "", raw=data)


def name_problem(name: Any) -> Optional[str]:
    """Why ``name`` is not a valid skill name, or None."""
    if not isinstance(name, str) or not name:
        return "a skill needs a name"
    if len(name) > MAX_NAME:
        return f"the name is {len(name)} characters; the limit is {MAX_NAME}"
    if not NAME_RE.match(name):
        return (f"invalid name {name!r}: use lowercase letters, digits, '.', '_' or '-', "
                "starting with a letter or digit")
    return None


def check_skill_text(text: str, name: Optional[str] = None) -> SkillMeta:
    """Validate a SKILL.md the agent writes: valid front matter, valid name (equal to ``name`` when
    given), a description within its limit, size within MAX_SKILL_BYTES."""
    size = len(text.encode("utf-8"))
    if size > MAX_SKILL_BYTES:
        raise SkillFormatError(f"SKILL.md would be {human_size(size)}; the limit is "
                               f"{human_size(MAX_SKILL_BYTES)}: move detail into references/ files")
    if "\x00" in text:
        raise SkillFormatError("SKILL.md must be text (it contains NUL bytes)")
    meta, body = parse(text)
    if meta.name is None:
        raise SkillFormatError("the front matter has no name: add 'name: <skill-name>'")
    problem = name_problem(meta.name)
    if problem:
        raise SkillFormatError(problem)
    if name is not None and meta.name != name:
        raise SkillFormatError(f"the front matter says name: {meta.name} "
                               f"but the skill is {name!r}; "
                               "they must match (a skill cannot be renamed by an edit)")
    if not meta.description:
        raise SkillFormatError("the front matter has no description: "
                               "add one line saying when to use it")
    if len(meta.description) > MAX_DESCRIPTION:
        raise SkillFormatError(f"the description is {len(meta.description)} characters; "
                               f"the limit is {MAX_DESCRIPTION}")
    if not body.strip():
        raise SkillFormatError("the skill has no instructions after the front matter")
    return meta


def one_line(description: str, limit: int = 120) -> str:
    """The description as one short line for lists and the prompt index."""
    text = " ".join(description.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def runs_here(meta: SkillMeta, platform: str = sys.platform) -> bool:
    """``platforms`` (macos, linux, windows) limits a skill to those operating systems; names
    Hermes does not know are ignored, and no list means everywhere."""
    known = [_OS_NAMES[p] for p in meta.platforms if p in _OS_NAMES]
    return not known or any(platform.startswith(p) for p in known)


def is_text(data: bytes) -> bool:
    """Text a skill file may hold: UTF-8 without NUL or control bytes (tab, newlines, ESC aside)."""
    if b"\x00" in data:
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return not any(ord(c) < 32 and c not in "\t\n\r\f\x1b" for c in text)


def human_size(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f} MB"
    if n >= 1000:
        return f"{n / 1000:.0f} KB"
    return f"{n} bytes"
