"""One writer at a time in a folder under HERMES_HOME (memories, skills), across processes and
threads.

An ``flock`` on ``<folder>/.lock``: the kernel drops it when the holder exits, however it exits, so
a killed process never leaves a stale lock behind.
"""
from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def dir_lock(folder: Path, timeout: float, error: type[Exception]) -> Iterator[None]:
    """Hold ``folder``'s lock for the block; ``error`` (with a message saying what to do) when
    another process keeps it longer than ``timeout`` seconds."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise error(f"{folder} is locked by another Hermes process for over "
                                f"{timeout:.0f} s; try again") from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)  # closing releases the lock
