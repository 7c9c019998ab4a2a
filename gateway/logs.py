"""The gateway's log: ``HERMES_HOME/logs/gateway.log`` (``gateway-<i>.log`` per worker) and the
console, both redacted, the files created 0600 and rotated.

Secrets never reach the log, whichever library formats them (httpx logs bot-token URLs): every
record, its traceback and its stack pass ``hermes_core.redact`` before any handler sees them.
"""
from __future__ import annotations

import logging
import logging.handlers
import sys
from pathlib import Path
from typing import Any, Optional

from hermes_core.config import hermes_home
from hermes_core.home import create_private_file, ensure_private_dir
from hermes_core.redact import redact

NOISY = ("httpx", "httpx2", "httpcore", "telegram", "aiohttp.access", "openai")
_TRACEBACKS = logging.Formatter()


class RedactSecrets(logging.Filter):
    """Replaces the given secret values (and URL passwords, key blocks) in every record."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets: list[str] = []
        self.add(secrets)

    def add(self, secrets: list[str]) -> None:
        """More values to hide (a platform plugin's token, known once plugins have loaded)."""
        self.secrets += [s for s in secrets if s and len(s) >= 6 and s not in self.secrets]

    def redact(self, text: str) -> str:
        return redact(text, self.secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        clean = self.redact(msg)
        if clean != msg:
            record.msg, record.args = clean, None
        # a traceback is text too: format it here, redacted, so handlers print this instead
        if record.exc_info and not record.exc_text:
            record.exc_text = _TRACEBACKS.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """Every log file (the first and each one after a rollover) is created 0600."""

    def _open(self) -> Any:
        create_private_file(Path(self.baseFilename))
        return super()._open()


def setup_logging(redacting: RedactSecrets, verbose: bool,
                  worker: Optional[int] = None) -> tuple[Path, list[logging.Handler]]:
    """Attach the file and console handlers to the root logger; returns the file and the
    handlers (the caller removes them when the gateway stops). Worker ``i`` of ``--workers N``
    logs to ``logs/gateway-<i>.log`` and tags its console lines."""
    logs = ensure_private_dir(hermes_home() / "logs")
    path = logs / ("gateway.log" if worker is None else f"gateway-{worker}.log")
    tag = "" if worker is None else f"[worker {worker}] "
    fmt = logging.Formatter(f"%(asctime)s %(levelname)s {tag}%(name)s: %(message)s")
    file_handler = PrivateRotatingFileHandler(path, maxBytes=5 << 20, backupCount=3,
                                              encoding="utf-8")
    console = logging.StreamHandler(sys.stderr)
    root = logging.getLogger()
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    for handler in (file_handler, console):
        handler.setFormatter(fmt)
        handler.addFilter(redacting)
        root.addHandler(handler)
    for noisy in NOISY:
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return path, [file_handler, console]


def remove_handlers(handlers: list[logging.Handler]) -> None:
    for handler in handlers:
        logging.getLogger().removeHandler(handler)
        handler.close()
