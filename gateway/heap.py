"""The gateway's garbage-collector settings: a long-running process with 1,000 sessions in memory
must not stop every session for a full collection in the middle of a wave of turns.

CPython collects the youngest objects after every 700 net allocations and walks the whole heap
(each cached agent, history and session) every 100 young collections; in a wave of a thousand
new sessions that is several full walks, each a pause every turn in flight waits out (seen:
``bench/gateway_load.py --sessions 1000``, first turns' p99). So, once the process has started:
everything that start-up made and still uses (modules, the tool registry, the skills index) is
moved out of the collector's sight (``gc.freeze``, never collected: it lives as long as the
process), and the thresholds are raised so that young collections are rarer and full ones come
about a thousand times less often. Reference cycles are still collected: a turn's garbage by the
young collections, an evicted agent's by the next full one.
"""
from __future__ import annotations

import gc

# young collection after this many net allocations; middle and full after this many of the one
# below (CPython's defaults: 700, 10, 10)
THRESHOLDS = (50_000, 20, 100)


def settle_after_start() -> None:
    """Collect start-up's garbage, freeze what is left, raise the thresholds."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
