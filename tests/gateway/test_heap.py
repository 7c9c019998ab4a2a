"""``gateway.heap``: frozen start-up objects stay; cycles made after it are still collected."""
from __future__ import annotations

import gc
import weakref

from gateway.heap import THRESHOLDS, settle_after_start


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


def test_a_cycle_made_after_the_freeze_is_still_collected() -> None:
    before = gc.get_threshold()
    try:
        kept = Node()
        settle_after_start()
        assert gc.get_threshold() == THRESHOLDS
        assert gc.get_freeze_count() > 0
        later = Node()
        gone = weakref.ref(later)
        del later
        gc.collect()
        assert gone() is None  # garbage made after start-up is collected as before
        assert kept.me is kept  # what was frozen is alive and untouched
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
