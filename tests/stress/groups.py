"""Which of ``make stress-full``'s two worker processes runs each heavy test.

``make stress-full`` runs with ``--dist loadgroup``: the tests of one group run one after the
other in one process, so the run lasts as long as its heavier group. With these two groups the
full-size run took 1,197 s with 10 model histories (the run before, split by file with
``--dist loadfile`` and 16 histories, took 1,304 s). The other split tried,
the cluster and the writers in one group and the SIGKILL test with the fuzzers, took 1,265 s:
the SIGKILL test slowed to 998 s beside the writers. On two cores the tests share one budget of
CPU, so the split moves the end by a few minutes at most.
"""

from __future__ import annotations

import pytest

SIGKILL_AND_CLUSTER = pytest.mark.xdist_group("kills-and-cluster")
"""The SIGKILL test and the standalone cluster."""

WRITERS_FUZZ_MODEL = pytest.mark.xdist_group("writers-fuzz-model")
"""The concurrent writers, the fuzzers and the reference-model test."""
