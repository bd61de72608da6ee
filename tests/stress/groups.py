"""Which of ``make stress-full``'s two worker processes runs each heavy test.

``make stress-full`` runs with ``--dist loadgroup``: the tests of one group run in one process,
so the run lasts as long as its heavier group. At full size in CI the SIGKILL test takes about
770 s and the standalone cluster 135 s; the concurrent writers about 390 s, the fuzzers 420 s
and the model test about 20 s a history. Two groups of about equal time keep both cores busy to
the end (``--dist loadfile`` had put the writers, fuzzers, model test and cluster on one
process: 1,300 s against 770 s).
"""

from __future__ import annotations

import pytest

KILLS = pytest.mark.xdist_group("kills-and-cluster")
"""The SIGKILL test and the standalone cluster."""

LOAD = pytest.mark.xdist_group("writers-fuzz-model")
"""The concurrent writers, the fuzzers and the reference-model test."""
