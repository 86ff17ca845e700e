"""Process-wide settings for a short-lived CLI run."""

from __future__ import annotations

import gc


def tune_gc() -> None:
    """Turn the cyclic garbage collector off for the run.

    rivet-ci builds large, acyclic object graphs (parsed YAML, frozen models), writes its outputs
    and exits. The cyclic collector frees almost nothing here but keeps rescanning the growing
    heap: measured on 10,000 exports, load + plan + JSON took 1.02-1.12 s with raised thresholds
    and 0.83 s with the collector off; peak memory was 330 MB either way, and only ~500
    unreachable cyclic objects were left at the end. Reference counting still frees everything
    else, and every connection and file is closed explicitly, never by a finalizer.
    """
    gc.disable()
