"""Table services: compaction, full rewrite, clean and rollback. Each one is a commit on the
timeline; ``Table.compact()``, ``Table.rewrite()``, ``Table.clean()`` and ``Table.rollback()``
call them."""

from __future__ import annotations

from evonb.services.progress import ProgressCallback, ProgressEvent, ProgressLog

__all__ = ["ProgressCallback", "ProgressEvent", "ProgressLog"]
