"""``/<skill-name> [text]``: the user's message with the skill's full text attached (SPEC §10).

The system prompt is untouched (it stays byte-stable); the skill travels in the user message, so
it is in the transcript like anything else the user sent. Used by the REPL, one-shot runs and the
gateway; a first word that names no skill leaves the message alone (``/etc/hosts is...``).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

from hermes_state.common import SKILL_END, SKILL_HEAD, SKILL_NO_TEXT
from tools.skills import loader

_INVOCATION = re.compile(r"^\s*/([A-Za-z0-9][A-Za-z0-9._-]*)(?:@\S+)?(?:[ \t]+|\n|$)(.*)\Z", re.S)


def split(text: str) -> Optional[tuple[str, str]]:
    """('name', 'rest') of a ``/name rest`` message (a Telegram ``/name@bot`` suffix dropped)."""
    m = _INVOCATION.match(text or "")
    if not m or text.lstrip().startswith("//"):
        return None
    return m.group(1).lower(), m.group(2).strip()


def find(catalog: loader.Catalog, name: str) -> Optional[loader.Skill]:
    """The skill a slash name means: ``code_review`` finds ``code-review`` (chats allow only _)."""
    return catalog.get(name) or catalog.get(name.replace("_", "-"))


def message(skill: loader.Skill, skill_text: str, request: str) -> str:
    """The user message for an invoked skill."""
    files = skill.files()
    listing = (f"\nIts files (read with skill_view(\"{skill.name}\", file_path)): "
               f"{', '.join(files)}" if files else "")
    ask = request or SKILL_NO_TEXT
    head, end = SKILL_HEAD.format(name=skill.name), SKILL_END.format(name=skill.name)
    return f"{head} Its instructions follow.{listing}]\n\n{skill_text.strip()}\n\n{end}\n\n{ask}"


def not_found(text: str, home: Path, config: Any = None) -> Optional[tuple[str, list[str]]]:
    """(name, close skill names) when ``text`` reads as ``/name …`` and no skill has that name:
    a one-shot run says so instead of sending the line to the model as if it were a question."""
    parts = split(text)
    if parts is None:
        return None
    from tools.skills.bundled import catalog
    from tools.skills.similar import close_names

    cat = catalog(home, config)
    if find(cat, parts[0]) is not None:
        return None
    return parts[0], close_names(parts[0], [s.name for s in cat.skills])


def expand(text: str, home: Path, config: Any = None) -> Optional[tuple[loader.Skill, str]]:
    """(skill, message to send) when ``text`` invokes a skill, else None."""
    parts = split(text)
    if parts is None:
        return None
    from tools.skills.bundled import catalog

    skill = find(catalog(home, config), parts[0])
    if skill is None:
        return None
    return skill, message(skill, loader.read_text(skill.skill_md), parts[1])
