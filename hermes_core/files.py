"""Writing a file so that a reader sees the old content or the new, never half of either.

The one way every part of Hermes replaces a file (config.yaml, .env, memories, skills, cron
output, the gateway's status): a temp file next to the target, named uniquely per process and
thread (two writers never share one), flushed and fsync'ed, then renamed over the target, and the
folder fsync'ed so the rename survives a power cut. Private (0600) unless asked otherwise.
"""
from __future__ import annotations

import os
import secrets
import threading
from pathlib import Path
from typing import Union

PRIVATE = 0o600


def atomic_write(path: Union[str, Path], data: Union[bytes, str], mode: int = PRIVATE) -> Path:
    """Replace ``path`` with ``data`` (str is written as UTF-8) in one step; OSError on failure,
    with nothing left behind and the old file untouched."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}."
                           f"{secrets.token_hex(3)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)  # O_CREAT's mode is filtered by the umask
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_folder(target.parent)
    return target


def _sync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems do not sync folders; the rename itself is still atomic
    finally:
        os.close(fd)


# A file's mtime comes from a clock tick (a few ms on Linux, up to 2 s on FAT): two writes in one
# tick at the same size leave the same (mtime, size, inode). Caches keyed on a stat hold only
# what was read at least this long after the file's mtime, when no such second write can follow.
SETTLE_NS = 1_000_000_000


def settled(mtime_ns: int, read_started_ns: int) -> bool:
    """Whether a read begun at ``read_started_ns`` (``time.time_ns()``) of a file with this mtime
    may be trusted later by its stat alone."""
    return mtime_ns <= read_started_ns - SETTLE_NS

