"""Secrets never reach transcripts or logs: known secret values are masked wherever text leaves a tool
or an error message. Pure string work; the values come from the environment and the agent's own key.
"""
from __future__ import annotations

import os
import re
from typing import Iterable, Optional

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.I)
MIN_SECRET_LEN = 8
MASK = "***"


def secret_values(extra: Iterable[Optional[str]] = ()) -> list[str]:
    """Values of secret-looking environment variables plus ``extra``, longest first."""
    found = {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and v and len(v) >= MIN_SECRET_LEN}
    found.update(v for v in extra if v and len(v) >= MIN_SECRET_LEN)
    return sorted(found, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str]) -> str:
    for value in secrets:
        if value in text:
            text = text.replace(value, MASK)
    return text
