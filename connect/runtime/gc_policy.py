"""The worker process's settings for CPython's cyclic garbage collector.

A worker makes and drops objects at hundreds of thousands a second (records,
converted values, the maps transforms copy). Almost none are in reference
cycles, so reference counting frees them; the cyclic collector still runs
after every 700 new container objects, and each of its full passes walks every
live object, the modules, plugins and configs loaded at start-up included.
Freezing the start-up heap takes it out of those walks, and a larger first
threshold makes the young collections rarer. Cycles are still collected.

While a worker starts, the collector is held back altogether: the imports and
the plugin scan make about a hundred young collections, which found almost
nothing and cost a seventh of the worker's start-up CPU. The one collection
of ``settle_heap`` takes what start-up left behind, and the collector runs
again from then on.
"""

from __future__ import annotations

import gc
import logging

__all__ = ["YOUNG_THRESHOLD", "hold_collection", "resume_collection", "settle_heap"]

log = logging.getLogger(__name__)

YOUNG_THRESHOLD = 50_000


def hold_collection() -> None:
    """No automatic collection until ``settle_heap`` (or ``resume_collection``): for a process that starts."""
    gc.disable()


def resume_collection() -> None:
    """Automatic collections again, as before ``hold_collection`` (a start that failed, in a process that goes
    on)."""
    gc.enable()


def settle_heap(collect: bool = True) -> None:
    """Collect once (unless ``collect`` is false), freeze what start-up left alive, raise the young-generation
    threshold and let the collector run again."""
    if collect:
        gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    gc.enable()
    log.info("Garbage collector: %d start-up objects frozen, young-generation threshold %d", gc.get_freeze_count(),
             YOUNG_THRESHOLD)
