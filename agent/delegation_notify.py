"""The parent's status line while its children run: one line at a time (children call it from
their threads), secrets masked, a child's own warnings and retries forwarded with its label."""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable

log = logging.getLogger("hermes.delegation")


def short(text: str, limit: int = 70) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis where it was cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Notifier:
    """The parent's status callback, one line at a time, secrets masked (children call it too)."""

    def __init__(self, parent: Any) -> None:
        from hermes_core.redact import secret_values

        self._callback = parent.hooks.status
        self._secrets = secret_values([parent.api_key, parent.config.delegation.api_key])
        self._lock = threading.Lock()

    def __call__(self, kind: str, message: str) -> None:
        from hermes_core.redact import redact

        message = redact(message, self._secrets)
        with self._lock:
            if self._callback is None:
                log.info("%s", message)
                return
            try:
                self._callback(kind, message)
            except Exception:
                log.exception("status callback failed")

    def child(self, label: str) -> Callable[[str, str], None]:
        """A child's status callback: its warnings and retries reach the user, labelled."""
        def forward(kind: str, message: str) -> None:
            if kind in ("warning", "retry"):
                self(kind, f"{label}: {message}")
            else:
                log.info("%s: %s", label, message)
        return forward
