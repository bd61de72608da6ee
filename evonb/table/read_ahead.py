"""An iterator produced ahead of its consumer in a thread of its own.

A rewrite reads and merges the next piece of a file while the current one is encoded; when
both are pyarrow calls that release the GIL, the two overlap on two cores. The producer runs
at most ``depth`` items ahead (a bounded queue), so memory stays at a few items. An error in
the producer is raised in the consumer, at the item where it happened; a consumer that stops
early (an error of its own, a ``break``, the generator closed) stops the producer before it
reads further, closes ``items`` (a generator's ``finally`` runs in the producer's thread)
and waits for it, so no thread outlives the iteration.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

_DONE = object()
_POLL_S = 0.05  # how often a producer blocked on a full queue looks whether to stop


class _Failed:
    """The producer's error, carried through the queue to the consumer."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def read_ahead(items: Iterable[T], *, depth: int = 1, name: str = "evonb-read-ahead"
               ) -> Iterator[T]:
    """The items of ``items``, in order, produced in a daemon thread ``name`` up to
    ``depth`` items ahead of the caller (``depth`` < 1: none ahead, ``items`` as they are)."""
    if depth < 1:
        yield from items
        return
    ready: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def offer(item: object) -> bool:
        """Put ``item`` once there is room; False when the consumer has stopped."""
        while not stop.is_set():
            try:
                ready.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    source = iter(items)

    def produce() -> None:
        try:
            for item in source:
                if not offer(item):
                    return
            offer(_DONE)
        except BaseException as exc:  # handed to the consumer, raised there
            offer(_Failed(exc))
        finally:  # a generator stopped early closes here, in the thread that ran it
            close = getattr(source, "close", None)
            if close is not None:
                close()

    worker = threading.Thread(target=produce, name=name, daemon=True)
    worker.start()
    try:
        while True:
            item = ready.get()
            if item is _DONE:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        worker.join()


__all__ = ["read_ahead"]
