"""Where the file tools read and write text: the disk, or an editor's buffers.

An editor surface (``hermes acp`` with a client that offers ``fs/*``) sets ``ToolContext.file_io``
(``can_read``/``can_write``, ``read_text(path)``, ``write_text(path, text)``): then read_file and
patch see unsaved changes, and the editor shows (and can undo) every write.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any


def editor_io(ctx: Any, what: str) -> Any:
    """The editor's file access (ACP ``fs/*``) when the surface offers it for ``what``."""
    io_ = getattr(ctx, "file_io", None)
    return io_ if io_ is not None and getattr(io_, f"can_{what}", False) else None


def open_text(ctx: Any, full: Path, newline: str | None) -> Any:
    """The file's text as a stream: the editor's buffer (unsaved changes included) or the disk."""
    import io

    editor = editor_io(ctx, "read")
    if editor is not None:
        return io.StringIO(editor.read_text(full), newline=newline)
    return open(full, encoding="utf-8-sig" if newline is None else "utf-8", errors="strict",
                newline=newline)


def write_text(ctx: Any, full: Path, text: str) -> None:
    editor = editor_io(ctx, "write")
    if editor is not None:
        editor.write_text(full, text)
        return
    with open(full, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
