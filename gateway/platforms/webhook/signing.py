"""Webhook signatures (pure): HMAC-SHA256 of the raw body with the shared secret, sent as
``sha256=<hex>`` (GitHub's ``X-Hub-Signature-256``; a bare hex digest is accepted too, as
several other senders send it). Compared in constant time."""
from __future__ import annotations

import hashlib
import hmac
from typing import Optional

HEADER = "X-Hub-Signature-256"


def sign(secret: str, body: bytes) -> str:
    """The header value a sender computes (tests and `curl` users use it too)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signature_ok(secret: str, body: bytes, header: Optional[str]) -> bool:
    if not secret or not header:
        return False
    given = header.strip()
    if given.lower().startswith("sha256="):
        given = given[7:]
    expected = sign(secret, body)[7:]
    return hmac.compare_digest(given.lower().encode("ascii", "replace"), expected.encode())
