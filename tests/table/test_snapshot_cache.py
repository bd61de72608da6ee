"""An open table keeps the snapshots it read last, a bounded number of them: time travel over
a long history reuses the recent ones and never grows without end."""

from __future__ import annotations

import evonb
from evonb.table.table import SNAPSHOTS_KEPT


def test_snapshots_are_kept_up_to_a_bound_most_recent_first(tmp_path):
    t = evonb.create_table(tmp_path / "t", "id bigint not null", primary_key="id")
    for i in range(SNAPSHOTS_KEPT + 6):
        t.alter(f"ALTER TABLE t ADD COLUMN c{i} int")
    commits = list(t.history())
    assert len(commits) == SNAPSHOTS_KEPT + 7
    first = {c.instant: t.snapshot(as_of=c.instant) for c in commits}
    assert t.cached_snapshots == SNAPSHOTS_KEPT
    # The latest snapshots read are kept: the same objects come back.
    recent = commits[-SNAPSHOTS_KEPT:]
    assert all(t.snapshot(as_of=c.instant) is first[c.instant] for c in recent)
    # The earliest were let go: replayed again, equal to what they were.
    again = t.snapshot(as_of=commits[0].instant)
    assert again is not first[commits[0].instant] and again == first[commits[0].instant]
    assert t.snapshot(as_of=commits[0].instant) is again
    assert t.cached_snapshots == SNAPSHOTS_KEPT
    assert t.snapshot().schema_version == commits[-1].instant
