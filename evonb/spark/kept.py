"""A small thread-safe cache of the last few values (least recently used goes first), for
query plans that depend only on immutable inputs named in their key."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Mapping
from typing import Generic, TypeVar

V = TypeVar("V")


class KeptCache(Mapping[Hashable, V], Generic[V]):
    """The last ``maxsize`` values put, by key; :meth:`get` of a key keeps it longest."""

    def __init__(self, maxsize: int) -> None:
        self._values: OrderedDict[Hashable, V] = OrderedDict()
        self._maxsize = maxsize
        self._lock = threading.Lock()

    def get(self, key: Hashable, default: V | None = None) -> V | None:  # type: ignore[override]
        with self._lock:
            found = self._values.get(key)
            if found is None:
                return default
            self._values.move_to_end(key)
            return found

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > self._maxsize:
                self._values.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def __getitem__(self, key: Hashable) -> V:
        with self._lock:
            return self._values[key]

    def __iter__(self) -> Iterator[Hashable]:
        with self._lock:
            return iter(list(self._values))

    def __len__(self) -> int:
        return len(self._values)
