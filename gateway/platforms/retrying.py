"""Sends that outlive a platform's restart: an answer whose send fails because the server is
down (a connection refused, a 5xx, a timeout) is tried again with jittered backoff until
``SEND_DEADLINE`` seconds have passed, so a homeserver or mail server restarting mid-conversation
costs the user a delay, not the answer. Refusals that will not change (403, 404, a bad request)
are not retried: the adapter's ``permanent`` test says which."""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Awaitable, Callable, Optional, TypeVar

from hermes_core.retry import jittered_backoff

log = logging.getLogger("gateway.platforms")

SEND_DEADLINE = 120.0
T = TypeVar("T")


class Permanent(Exception):
    """Raised by a send attempt whose failure retrying cannot fix."""


async def retrying(attempt: Callable[[], Awaitable[T]], what: str,
                   deadline: float = SEND_DEADLINE, cap: float = 5.0) -> Optional[T]:
    """``await attempt()`` until it returns, raises ``Permanent``, or the deadline passes
    (None then; the failure is logged once per attempt at warning level)."""
    start, tries = time.monotonic(), 0
    while True:
        tries += 1
        try:
            return await attempt()
        except Permanent as exc:
            log.warning("%s refused: %s", what, exc)
            return None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a transport failure: try again
            left = deadline - (time.monotonic() - start)
            if left <= 0:
                log.warning("%s failed for %.0f s, giving up: %s", what, deadline, _line(exc))
                return None
            delay = min(jittered_backoff(tries, base=0.5, cap=cap), left)
            log.warning("%s failed (attempt %d, retrying in %.1fs): %s", what, tries, delay,
                        _line(exc))
            await asyncio.sleep(delay)


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def first_line(value: Any) -> str:
    return " ".join(str(value).split())[:200]
