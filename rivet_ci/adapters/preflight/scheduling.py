"""How one collection schedules its probes: connection slots per `source_group` and per
source, sessions handed from lane to lane, probe results shared between lanes, progress.

No rules here about *what* to probe (that is `rivet_ci.core.facts.probe_rules`), and no SQL: the
collector (`collect.py`) runs its lanes on this machinery.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from rivet_ci.adapters.preflight.base import ProbeSession

__all__ = ["GroupSlots", "Held", "Memo", "Outcome", "Progress", "ProgressCallback", "SourcePool",
           "close_session", "outcome_of"]

log = logging.getLogger(__name__)
T = TypeVar("T")
ProgressCallback = Callable[[int, int], None]


class Progress:
    def __init__(self, total: int, callback: ProgressCallback | None) -> None:
        self._total, self._done, self._callback = total, 0, callback
        self._lock = threading.Lock()

    def tick(self) -> None:
        with self._lock:
            self._done += 1
            if self._callback is not None:
                try:
                    self._callback(self._done, self._total)
                except Exception:  # a broken progress display must not lose facts
                    log.exception("progress callback failed")


class GroupSlots:
    """Connection slots per source_group (see the module docstring); the source's own slots are
    its :class:`SourcePool`."""

    def __init__(self, per_key: int) -> None:
        self._per_key = per_key
        self._lock = threading.Lock()
        self._slots: dict[str, threading.BoundedSemaphore] = {}

    def _slot(self, key: str) -> threading.BoundedSemaphore:
        with self._lock:
            return self._slots.setdefault(key, threading.BoundedSemaphore(self._per_key))

    @contextmanager
    def hold(self, group: str | None, pool: SourcePool) -> Iterator[Held]:
        slot = self._slot(group) if group else None
        if slot is not None:
            slot.acquire()  # always group first, then source: no lock-order cycles
        try:
            with pool.session_slot() as held:
                yield held
        finally:
            if slot is not None:
                slot.release()


@dataclass
class Held:
    """The session (if any yet) a lane holds while it has a slot of its source."""

    session: ProbeSession | None = None


class SourcePool:
    """At most `size` sessions on one source, handed from lane to lane: lanes of a source that
    run one after another reuse one connection instead of opening their own.

    An idle session stays open only until some lane must open a new connection (to any source):
    then every idle one is closed first, so a `source_group` spanning several sources never has
    more connections open than lanes running."""

    def __init__(self, size: int, every: list[SourcePool]) -> None:
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._idle: list[ProbeSession] = []
        self._every = every
        every.append(self)

    def close_every_idle(self) -> None:
        for pool in list(self._every):
            pool.close()

    @contextmanager
    def session_slot(self) -> Iterator[Held]:
        self._slots.acquire()
        with self._lock:
            held = Held(self._idle.pop() if self._idle else None)
        try:
            yield held
        finally:
            session = held.session
            if session is not None:
                if session.broken:
                    close_session(session)
                else:
                    with self._lock:
                        self._idle.append(session)
            self._slots.release()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for session in idle:
            close_session(session)


def close_session(session: ProbeSession) -> None:
    try:
        session.close()
    except Exception:  # closing a dead connection may fail; ignore
        log.debug("closing a preflight session failed", exc_info=True)


@dataclass(frozen=True)
class Outcome(Generic[T]):
    value: T | None = None
    error: BaseException | None = None


class Memo:
    """Probe results shared by all lanes: each key is computed once, by whoever claims it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._futures: dict[Hashable, Future[Any]] = {}

    def claim(self, keys: Iterable[Hashable]) -> tuple[list[Hashable], dict[Hashable, Future[Any]]]:
        mine: list[Hashable] = []
        out: dict[Hashable, Future[Any]] = {}
        with self._lock:
            for key in keys:
                if key not in self._futures:
                    self._futures[key] = Future()
                    mine.append(key)
                out[key] = self._futures[key]
        return mine, out


def outcome_of(future: Future[Any]) -> Outcome[Any]:
    error = future.exception()
    return Outcome(error=error) if error is not None else Outcome(value=future.result())
