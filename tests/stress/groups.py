"""Which of ``make stress-full``'s two worker processes runs each heavy test.

``make stress-full`` runs with ``--dist loadgroup``: the tests of one group run one after the
other in one process, so the run lasts as long as its heavier group. The standalone cluster
and the concurrent writers both start JVMs of their own and slow each other down the most when
they overlap (in CI's full-size run, side by side: the cluster 478 s, the writers 607 s;
apart, in earlier runs: about 135 s and 390 s), so they share a group; the model test joins
them, and the SIGKILL test (about 640 s) and the fuzzers (about 320 s) make the other group.
"""

from __future__ import annotations

import pytest

OWN_JVMS = pytest.mark.xdist_group("cluster-writers-model")
"""The standalone cluster, the concurrent writers and the reference-model test."""

KILLS_AND_FUZZ = pytest.mark.xdist_group("kills-fuzz")
"""The SIGKILL test and the fuzzers."""
