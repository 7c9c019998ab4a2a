"""Webhook signatures (pure), chosen per hook with ``signature:``:

- ``github`` (the default): HMAC-SHA256 of the raw body with the shared secret, sent as
  ``X-Hub-Signature-256: sha256=<hex>`` (a bare hex digest is accepted too, as several other
  senders send it).
- ``stripe``: ``Stripe-Signature: t=<unix time>,v1=<hex>[,v1=<hex>...]``, the HMAC-SHA256 of
  ``<t>.<body>``; a timestamp more than ``TOLERANCE`` seconds away from now is refused, so a
  captured request cannot be replayed later.

Compared in constant time. ``check`` returns None when the request is signed, else the reason
(one line saying what to send instead).
"""
from __future__ import annotations

import hashlib
import hmac
from typing import Mapping, Optional

HEADER = "X-Hub-Signature-256"
STRIPE_HEADER = "Stripe-Signature"
SCHEMES = ("github", "stripe")
TOLERANCE = 300  # seconds (Stripe's own default)


def _hex(secret: str, data: bytes) -> str:
    return hmac.new(secret.encode(), data, hashlib.sha256).hexdigest()


def sign(secret: str, body: bytes) -> str:
    """The GitHub-style header value a sender computes (tests and `curl` users use it too)."""
    return "sha256=" + _hex(secret, body)


def sign_stripe(secret: str, body: bytes, timestamp: int) -> str:
    """The ``Stripe-Signature`` header value a sender computes at ``timestamp``."""
    return f"t={timestamp},v1={_hex(secret, str(timestamp).encode() + b'.' + body)}"


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.strip().lower().encode("ascii", "replace"), expected.encode())


def signature_ok(secret: str, body: bytes, header: Optional[str]) -> bool:
    if not secret or not header:
        return False
    given = header.strip()
    if given.lower().startswith("sha256="):
        given = given[7:]
    return _same(given, _hex(secret, body))


def stripe_problem(secret: str, body: bytes, header: Optional[str], now: float) -> Optional[str]:
    """None when ``header`` is a valid, fresh Stripe-style signature of ``body``."""
    how = (f"send {STRIPE_HEADER}: t=<unix time>,v1=<hex HMAC-SHA256 of '<t>.<body>' keyed "
           "with the webhook's secret>")
    if not secret or not header:
        return f"Missing {STRIPE_HEADER}: {how}."
    fields = [part.strip().partition("=") for part in header.split(",")]
    stamps = [v for k, _, v in fields if k == "t"]
    given = [v for k, _, v in fields if k == "v1"]
    if len(stamps) != 1 or not stamps[0].isdigit() or not given:
        return f"Malformed {STRIPE_HEADER}: {how}."
    if abs(now - int(stamps[0])) > TOLERANCE:
        return (f"{STRIPE_HEADER} timestamp is more than {TOLERANCE}s from now (a stale or "
                "replayed request); sign each delivery when it is sent.")
    expected = _hex(secret, stamps[0].encode() + b"." + body)
    if not any(_same(v, expected) for v in given):
        return f"Wrong {STRIPE_HEADER}: {how}."
    return None


def check(scheme: str, secret: str, body: bytes, headers: Mapping[str, str],
          now: float) -> Optional[str]:
    """None when the request carries a valid signature of the hook's scheme, else why not."""
    if scheme == "stripe":
        return stripe_problem(secret, body, headers.get(STRIPE_HEADER), now)
    header = headers.get(HEADER)
    if signature_ok(secret, body, header):
        return None
    return (f"{'Wrong' if header else 'Missing'} {HEADER}: send 'sha256=' + the hex HMAC-SHA256 "
            "of the body keyed with the webhook's secret.")
