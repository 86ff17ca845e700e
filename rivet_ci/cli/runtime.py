"""Process-wide settings for a short-lived CLI run."""

from __future__ import annotations

import gc
import sys


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


def leave_heap_to_exit() -> None:
    """Let the process end without the interpreter's final sweep of the heap.

    With the collector off, Python still runs one full collection while it shuts down, over
    every object left — the imported modules' classes, pydantic schemas and typing objects
    included: 40-50 ms of CPU on every `rivet-ci` run, whatever the command (measured: the
    teardown of a process that only imports the `plan` command took 40-55 ms, 8 ms with this).
    Freezing moves every object to the permanent generation, which that collection skips; the
    operating system reclaims the memory when the process exits a moment later. Safe for the
    same reason as `tune_gc`: every file and connection is closed explicitly, nothing rivet-ci
    needs is left to a finalizer. Only for the process entry point (`main`), never in-process.
    """
    gc.freeze()


def drop_model_attribute_hook() -> None:
    """Let reads of pydantic model fields take the interpreter's fast path for the rest of the run.

    pydantic's `BaseModel` defines `__getattr__`, only to serve private attributes and extra
    fields, which no rivet-ci model has (`tests/test_model_build.py` pins both). Any class with a
    `__getattr__` gets CPython's generic attribute hook, and the interpreter cannot specialise a
    read through it: every read of a model field — loading, planning and writing read ~50 per
    export — takes the slow, unspecialised path. Without the hook a missing attribute raises the
    same `AttributeError` ("'X' object has no attribute 'y'"), so for rivet-ci's models nothing
    changes but the speed. Measured on `plan` of 10,000 exports: 1.17 s -> 1.02 s of CPU (best of
    10 alternating runs); 1,000 exports: 1,531M -> 1,491M instructions.

    Process-wide, so only for the process entry point (`main`), after the command's modules are
    imported; in-process callers (tests, library use) keep pydantic as it is. Nothing to do when
    pydantic is not imported (`--version`)."""
    pydantic_main = sys.modules.get("pydantic.main")
    if pydantic_main is not None and "__getattr__" in vars(pydantic_main.BaseModel):
        del pydantic_main.BaseModel.__getattr__
