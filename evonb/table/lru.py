"""A bounded least-recently-used mapping, for caches ``functools.lru_cache`` cannot express:
those kept per object (the snapshots of one open table), or keyed by something other than
the arguments (query plans keyed by their session's id and every input file's size and time).
A pure function of hashable arguments uses ``functools.lru_cache`` instead."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(OrderedDict[K, V]):
    """At most ``maxsize`` entries: setting one, or a :meth:`get` that finds it, makes it the
    most recent; the least recent goes first."""

    def __init__(self, maxsize: int) -> None:
        super().__init__()
        self.maxsize = maxsize
        self._lock = threading.Lock()

    def get(self, key: K, default: V | None = None) -> V | None:  # type: ignore[override]
        with self._lock:
            if key not in self:
                return default
            self.move_to_end(key)
            return super().__getitem__(key)

    def __setitem__(self, key: K, value: V) -> None:
        with self._lock:
            super().__setitem__(key, value)
            self.move_to_end(key)
            while len(self) > self.maxsize:
                self.popitem(last=False)
