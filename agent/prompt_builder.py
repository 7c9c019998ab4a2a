"""The system prompt: identity, persona (SOUL.md), context files, memory, skills index.

Built once per session and then kept byte-identical across turns so provider prompt caches hit;
nothing time-varying (clock, counters) goes in here.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

DEFAULT_IDENTITY = (
    "You are Hermes, a capable personal AI agent. You can run tools: use them when they help, "
    "check their results, and answer plainly. When a task is done, say what you did."
)
CONTEXT_FILES = ("AGENTS.md", ".hermes.md", "HERMES.md")
MAX_FILE_CHARS = 20_000


def _read(path: Path, limit: int = MAX_FILE_CHARS) -> Optional[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text:
        return None
    return text if len(text) <= limit else text[:limit] + "\n[... truncated ...]"


def _skills_index(home: Path) -> Optional[str]:
    root = home / "skills"
    if not root.is_dir():
        return None
    lines = []
    for skill in sorted(root.glob("*/SKILL.md")):
        desc = ""
        try:
            with skill.open(encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if line.lower().startswith("description:"):
                        desc = line.split(":", 1)[1].strip()
                        break
        except OSError:
            continue
        lines.append(f"- {skill.parent.name}: {desc}" if desc else f"- {skill.parent.name}")
    return "Skills available (read the SKILL.md file to use one):\n" + "\n".join(lines) if lines else None


def build_system_prompt(home: Path, cwd: Path, *, skip_context_files: bool = False, skip_memory: bool = False,
                        platform: str = "cli") -> str:
    parts = [_read(home / "SOUL.md") or DEFAULT_IDENTITY]
    if not skip_memory:
        for name, title in (("MEMORY.md", "Your notes"), ("USER.md", "About the user")):
            text = _read(home / "memories" / name, 8_000)
            if text:
                parts.append(f"## {title}\n{text}")
    if not skip_context_files:
        for name in CONTEXT_FILES:
            text = _read(cwd / name)
            if text:
                parts.append(f"## Project context ({name})\n{text}")
                break
    skills = _skills_index(home)
    if skills:
        parts.append(skills)
    parts.append(f"Working directory: {cwd}. Platform: {platform}.")
    return "\n\n".join(parts)
