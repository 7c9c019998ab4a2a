"""The gateway's garbage-collector policy: full collections on a clock, not inside every burst.

Why: CPython starts a full collection whenever the objects that survived two young collections
have grown by a quarter since the last one. A gateway taking in a burst of new sessions grows
that much several times a second, and a full collection scans every tracked object while the
whole process waits. In ``bench/gateway_load.py --sessions 1000 --rounds 3 --delay 5 --pattern
staggered`` three of them (98, 166 and 190 ms) fell in the first five seconds and freed 74
objects between them: they were the figure's p99. So:

- once the gateway is up, what start-up made (modules, the tool registry, the SDK's classes) is
  frozen (``gc.freeze``): no collection scans it again;
- young collections (generations 0 and 1) run as CPython runs them: they find the cycles a turn
  leaves behind;
- the full collection is taken off the allocation count and run from the gateway's status loop,
  only after ``YOUNG_BEFORE_FULL`` young collections (CPython's own third threshold): when no turn
  is in flight, at most every ``FULL_SECONDS`` (nobody waits on the pause); under load, at most
  every ``BUSY_FULL_SECONDS`` (one pause of ~0.1-0.2 s at 1,000 turns in flight, against one
  every 1.5 s before).

What a full collection would free meanwhile is small: an agent points back at itself only weakly
(``AIAgent.__init__``), so a dropped agent goes with its reference count.
"""
from __future__ import annotations

import gc
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Optional

log = logging.getLogger("gateway")

FULL_SECONDS = 30.0
BUSY_FULL_SECONDS = 300.0
YOUNG_BEFORE_FULL = 10
NEVER = 1 << 30  # a third threshold the allocation count never reaches


def full_collection_due(now: float, last: float, young: int, busy: bool = False,
                        every: float = FULL_SECONDS, busy_every: float = BUSY_FULL_SECONDS) -> bool:
    """Whether a full collection should run: ``young`` collections of generation 1 happened
    since the last full one (at ``last``), which was at least ``every`` seconds ago, or
    ``busy_every`` while turns are in flight (``busy``)."""
    return young >= YOUNG_BEFORE_FULL and now - last >= (busy_every if busy else every)


@dataclass
class HeapPolicy:
    """One process's policy: ``settle`` once it is up, ``tick`` from a loop it already runs,
    ``release`` when it stops (so an in-process gateway leaves its host's collector as it was)."""

    every: float = FULL_SECONDS
    busy_every: float = BUSY_FULL_SECONDS
    last: float = 0.0
    frozen: int = 0
    full_collections: int = 0
    last_full_ms: float = 0.0
    freed: int = 0
    _saved: Optional[tuple[int, int, int]] = field(default=None, repr=False)

    def settle(self) -> None:
        gc.collect()  # the warm-up's agent and other start-up garbage go before the freeze
        gc.freeze()
        self.frozen = gc.get_freeze_count()
        self._saved = gc.get_threshold()
        gc.set_threshold(self._saved[0], self._saved[1], NEVER)
        self.last = time.monotonic()
        log.info("heap settled: %d start-up objects frozen; full collections at most every "
                 "%.0f s (%.0f s while turns are in flight)", self.frozen, self.every,
                 self.busy_every)

    def tick(self, busy: bool = False, now: Optional[float] = None,
             young: Optional[int] = None) -> bool:
        """Run a full collection when one is due (``busy``: turns are in flight); True when it
        ran."""
        now = time.monotonic() if now is None else now
        young = gc.get_count()[2] if young is None else young
        if not full_collection_due(now, self.last, young, busy, self.every, self.busy_every):
            return False
        started = time.perf_counter()
        freed = gc.collect()
        self.last_full_ms = (time.perf_counter() - started) * 1000
        self.last, self.freed = now, self.freed + freed
        self.full_collections += 1
        return True

    def release(self) -> None:
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            gc.unfreeze()
            self._saved = None

    def report(self) -> dict[str, Any]:
        """For ``/health/detailed``."""
        return {"settled": self._saved is not None, "frozen_objects": self.frozen,
                "full_every_seconds": self.every, "busy_full_every_seconds": self.busy_every,
                "full_collections": self.full_collections,
                "last_full_ms": round(self.last_full_ms, 1), "freed_by_full": self.freed}
