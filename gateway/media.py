"""What a chat message's attachments become for the agent, and the agent's files for the chat.

In (issue 24): images -> ``image_url`` parts (the model sees them); voice notes -> text through
``gateway.stt`` (the transcript is also shown to the user, so they see what the agent heard);
other files -> saved into the gateway's working directory under ``uploads/`` (the agent's file
tools reach them there) and named in the message. Out: lines ``MEDIA:<path>`` in an answer (Hermes
Agent's convention) name files inside the working directory to send as attachments; anything
outside it is refused, so a chat user cannot have the agent mail them the owner's files.

``compose`` and ``outgoing_files`` are pure; ``prepare`` does the I/O.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Optional

from gateway.platforms.base import Attachment
from hermes_core.images import data_url, image_part, sniff_image, text_part

log = logging.getLogger("gateway.media")

UPLOADS = "uploads"
_MEDIA_LINE = re.compile(r"^[ \t]*MEDIA:[ \t]*(\S[^\n]*?)[ \t]*$", re.M)
_UNSAFE = re.compile(r"[^\w.\- ]+")


@dataclass
class Prepared:
    content: Any  # the turn's user message: text, or text + image parts
    notices: list[str] = field(default_factory=list)  # what the user is told first (transcripts)
    usable: bool = True  # False: nothing to answer (only a voice note that failed)


def safe_name(name: str, fallback: str = "file") -> str:
    """A file name without directories or odd characters (pure)."""
    base = _UNSAFE.sub("_", Path(name.replace("\\", "/")).name).strip(" ._")
    return base[:120] or fallback


def compose(text: str, images: list[dict[str, Any]], lines: list[str]) -> Any:
    """The user message: the text, then one line per voice note or saved file; with images, a
    list of parts (text first) as ``hermes_core.images`` shapes them (pure)."""
    body = "\n".join(p for p in [text.strip(), *lines] if p)
    if not images:
        return body
    return [text_part(body or "(image)"), *images]


def _unique(folder: Path, name: str) -> Path:
    path, n = folder / name, 1
    while path.exists():
        stem, dot, ext = name.partition(".")
        path, n = folder / f"{stem}-{n}{dot}{ext}", n + 1
    return path


def save_upload(workdir: Path, att: Attachment) -> Path:
    """Write an attachment into ``<workdir>/uploads/`` (never over an existing file)."""
    folder = workdir / UPLOADS
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = _unique(folder, safe_name(att.name))
    path.write_bytes(att.data)
    path.chmod(0o600)
    return path


async def _voice_line(att: Attachment, stt: Any, notices: list[str]) -> Optional[str]:
    from gateway.stt import SpeechError, transcribe

    try:
        heard = await transcribe(stt, att.data, att.name, att.mime)
    except SpeechError as exc:
        notices.append(f"🎤 I could not transcribe your voice note: {exc}")
        return None
    notices.append(f"🎤 “{heard}”" if heard
                   else "🎤 (the voice note had no words I could hear)")
    return f"[voice note, transcribed] {heard}" if heard else None


async def prepare(text: str, attachments: list[Attachment], workdir: Path, stt: Any) -> Prepared:
    """The turn's content for a message with attachments (see the module docstring)."""
    images: list[dict[str, Any]] = []
    lines: list[str] = []
    notices: list[str] = []
    for att in attachments:
        if att.error or not att.data:
            lines.append(f"[{att.kind} {safe_name(att.name)} was not received: "
                         f"{att.error or 'empty'}]")
            continue
        mime = sniff_image(att.data) if att.kind == "image" else None
        if mime:
            images.append(image_part(data_url(att.data, mime)))
        elif att.kind == "voice":
            line = await _voice_line(att, stt, notices)
            if line:
                lines.append(line)
        else:
            path = save_upload(workdir, att)
            size = f"{max(1, len(att.data) // 1024)} KB"
            lines.append(f"[file saved: {path.relative_to(workdir)} ({size})]")
    content = compose(text, images, lines)
    return Prepared(content, notices, usable=bool(content))


def outgoing_files(answer: str, workdir: Path) -> tuple[str, list[Path], list[str]]:
    """(answer without its ``MEDIA:`` lines, files to attach, problems to mention) (pure but for
    checking that each file exists)."""
    files: list[Path] = []
    problems: list[str] = []
    root = workdir.resolve()
    for raw in _MEDIA_LINE.findall(answer):
        name = raw.strip().strip("`'\"")
        path = (root / Path(name).expanduser()).resolve()
        if path != root and root not in path.parents:
            problems.append(f"(not sent: {name} is outside the working directory)")
        elif not path.is_file():
            problems.append(f"(not sent: {name} does not exist)")
        elif path not in files:
            files.append(path)
    text = _MEDIA_LINE.sub("", answer).strip() if files or problems else answer
    return text, files, problems


Reply = Callable[[str], Awaitable[None]]
