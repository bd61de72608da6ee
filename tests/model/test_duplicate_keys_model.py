"""A reference model of keys stored more than once, driven with random writes and services.

The main model (:mod:`tests.model.machine`) keeps one row per key. A key can be stored twice:
an insert checks only its own rows, so inserting a key the table holds stores it again (and
``evonb.write.insert_duplicates = 'allow'`` takes repeated keys in one insert). This model
keeps a multiset of rows per key and plays inserts of stored and new keys, upserts, deletes,
compaction and clustering on every merge path of both table types, merge-on-read tables with
Avro or Parquet log blocks (``EVONB_DUPLICATES_HISTORIES`` histories each, 3 by default):

- an insert adds its rows;
- an upsert of a key changes only that key: a new key gets the row; a stored key reads the
  new row once in a copy-on-write table (the rewrite's merge picks one winner) and once per
  stored row in a merge-on-read table (each stored row is replaced in place);
- a delete removes every row of its keys;
- compaction and clustering change no row.

After every step Spark's read and the JVM-free reader must both equal the model; after a
compaction or clustering, their reads as of every earlier commit must equal the model's rows
at that commit (the service replaced the files those commits wrote). A failure
prints the seed (``EVONB_DUPLICATES_SEED`` replays it) and hypothesis's shortest steps.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import tempfile
from collections import Counter
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    rule,
)

import evonb
from tests.model.seeded import play_histories, seed_from
from tests.spark.merge_paths import MERGE_PATHS

pytestmark = [pytest.mark.spark, pytest.mark.model]

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
SPARK: list[Any] = []
PATH: list[str] = []  # the merge path of the histories being played
VALUES = itertools.count()
SEEN: Counter[str] = Counter()  # checks made with a key stored twice, per merge path
AS_OF: Counter[str] = Counter()  # reads as of an earlier commit after a service, per path


class DuplicateKeys(RuleBasedStateMachine):
    """One table of one merge path and its model: key -> the values of its rows."""

    def __init__(self) -> None:
        super().__init__()
        self.folder = tempfile.mkdtemp(prefix="evonb-dups-")
        self.model: dict[int, list[str]] = {}
        self.table: Any = None
        self.states: list[tuple[str, Counter[tuple[int, str]]]] = []  # commit -> its rows
        self.path = ""
        self.allow = False

    @initialize(allow=st.booleans(), parquet_logs=st.booleans())
    def create(self, allow: bool, parquet_logs: bool = False) -> None:
        path = PATH[0]
        table_type, props = MERGE_PATHS[path]
        if allow:
            props = props | {"evonb.write.insert_duplicates": "allow"}
        if parquet_logs and table_type == "mor":
            props = props | {"evonb.mor.log_format": "parquet"}
        self.path, self.allow = path, allow
        self.table = evonb.create_table(
            os.path.join(self.folder, "t"), "id bigint not null, v string", primary_key="id",
            table_type=table_type, properties=props)
        for keys in ([0, 1], [0, 2]):  # every history starts with key 0 stored twice
            df, rows = self._frame(keys)
            self.table.write(df)
            for k, v in rows:
                self.model.setdefault(k, []).append(v)
        self.check("the first inserts")

    def _keys(self, vseed: int) -> list[int]:
        """One to three keys of 0 to 5, each a stored one half of the time (when any is)."""
        rng = random.Random(vseed)
        stored = sorted(self.model)
        return [rng.choice(stored) if stored and rng.random() < 0.5 else rng.randrange(6)
                for _ in range(rng.randint(1, 3))]

    def _frame(self, keys: list[int]) -> tuple[Any, list[tuple[int, str]]]:
        rows = [(k, f"v{next(VALUES)}") for k in keys]
        values = ", ".join(f"({k}L, '{v}')" for k, v in rows)
        # a frame Spark can size, so small merges take the direct merge where they may
        return SPARK[0].sql(f"select * from values {values} as r(id, v)").coalesce(1), rows

    @rule(vseed=SEEDS)
    def insert(self, vseed: int) -> None:
        keys = self._keys(vseed)
        if not self.allow:
            keys = list(dict.fromkeys(keys))  # an insert refuses a key twice in its own rows
        df, rows = self._frame(keys)
        self.table.write(df)
        for k, v in rows:
            self.model.setdefault(k, []).append(v)
        self.check("insert")

    @rule(vseed=SEEDS)
    def upsert(self, vseed: int) -> None:
        keys = self._keys(vseed)
        df, rows = self._frame(list(dict.fromkeys(keys)))
        self.table.write(df, mode="upsert")
        per_row = self.table.table_type == "mor"
        for k, v in rows:
            stored = self.model.get(k) or [None]
            self.model[k] = [v] * (len(stored) if per_row else 1)
        self.check("upsert")

    @rule(vseed=SEEDS)
    def delete(self, vseed: int) -> None:
        keys = self._keys(vseed)
        df, _ = self._frame(keys)
        self.table.write(df.select("id"), mode="delete")
        for k in keys:
            self.model.pop(k, None)
        self.check("delete")

    @rule()
    def service(self) -> None:
        if self.table.table_type == "mor":
            self.table.compact()
        else:
            self.table.cluster()
        step = "compaction" if self.table.table_type == "mor" else "clustering"
        self.check(step)
        for instant, want in self.states[:-1]:
            self.check_rows(f"{step}, as of {instant}", want, instant)
            AS_OF[self.path] += 1

    def check(self, step: str) -> None:
        want = Counter((k, v) for k, vs in self.model.items() for v in vs)
        self.check_rows(step, want)
        self.states.append((self.table.timeline.last_completed().instant, want))
        if any(len(vs) > 1 for vs in self.model.values()):
            SEEN[self.path] += 1

    def check_rows(self, step: str, want: Counter[tuple[int, str]],
                   as_of: str | None = None) -> None:
        spark_rows = Counter((r.id, r.v) for r in self.table.read(as_of).collect())
        arrow_rows = Counter((r["id"], r["v"]) for r in self.table.to_arrow(as_of).to_pylist())
        assert spark_rows == want, f"{self.path} after {step}: Spark read {sorted(spark_rows)}"
        assert arrow_rows == want, f"{self.path} after {step}: Arrow read {sorted(arrow_rows)}"

    def teardown(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.mark.parametrize("path", sorted(MERGE_PATHS))
def test_keys_stored_twice_against_the_model(spark: Any, path: str) -> None:
    SPARK[:], PATH[:] = [spark], [path]
    SEEN.clear()
    AS_OF.clear()
    histories = int(os.environ.get("EVONB_DUPLICATES_HISTORIES") or 3)
    seed = seed_from("EVONB_DUPLICATES_SEED")
    print(f"duplicate keys model, {path}: seed {seed}; replay with "
          f"EVONB_DUPLICATES_SEED={seed}")
    play_histories(DuplicateKeys, histories=histories, steps=8, min_steps=4, seed=seed,
                   replay=f"duplicate keys model seed: EVONB_DUPLICATES_SEED={seed}")
    print(f"duplicate keys model, {path}: {SEEN[path]} checks with a key stored twice, "
          f"{AS_OF[path]} reads as of an earlier commit after a service")
    assert SEEN[path] >= histories  # every history stored a key twice


def test_a_compaction_after_an_upsert_of_a_key_stored_twice_in_one_file(spark: Any) -> None:
    """CI seed 3317903070, shrunk: the Arrow compaction kept one of two rows of a key an
    insert stored twice in one base file."""
    SPARK[:], PATH[:] = [spark], ["mor-driver"]
    s = DuplicateKeys()
    try:
        s.create(allow=True)
        s.delete(vseed=0)
        s.service()
        s.insert(vseed=0)
        s.insert(vseed=9402951)  # key 0 twice in one file
        s.delete(vseed=0)
        s.upsert(vseed=324)
        assert len(s.model[0]) == 4
        s.service()
    finally:
        s.teardown()
