"""Backoff for retryable provider errors."""
from __future__ import annotations

import random
from typing import Optional


def jittered_backoff(attempt: int, base: float = 1.0, cap: float = 30.0,
                     retry_after: Optional[float] = None) -> float:
    """Seconds to wait before retry ``attempt`` (1-based): exponential with full jitter.

    A server's ``Retry-After`` wins when given (capped so a hostile header cannot stall us for
    hours).
    """
    if retry_after is not None and retry_after >= 0:
        return min(float(retry_after), 120.0)
    ceiling = min(cap, base * (2 ** max(0, attempt - 1)))
    return ceiling / 2 + random.uniform(0, ceiling / 2)
