"""The worker process's settings for CPython's cyclic garbage collector.

A worker makes and drops objects at hundreds of thousands a second (records,
converted values, the maps transforms copy). Almost none are in reference
cycles, so reference counting frees them; the cyclic collector still runs
after every 700 new container objects, and each of its full passes walks every
live object, the modules, plugins and configs loaded at start-up included.
Freezing the start-up heap takes it out of those walks, and a larger first
threshold makes the young collections rarer. Cycles are still collected.
"""

from __future__ import annotations

import gc
import logging

__all__ = ["YOUNG_THRESHOLD", "settle_heap"]

log = logging.getLogger(__name__)

YOUNG_THRESHOLD = 50_000


def settle_heap() -> None:
    """Collect once, freeze what start-up left alive, and raise the young-generation threshold."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    log.info("Garbage collector: %d start-up objects frozen, young-generation threshold %d", gc.get_freeze_count(),
             YOUNG_THRESHOLD)
