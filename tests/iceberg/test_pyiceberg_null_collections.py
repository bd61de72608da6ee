"""A canary for the one allowance the model test makes for pyiceberg: a null list or map comes
back from pyiceberg as an empty one (apache/iceberg-python#3833). The files hold nulls and
evonb's readers return them. When this test fails, pyiceberg has fixed the defect: remove
``as_pyiceberg_reads`` from ``tests/model/machine.py`` so the comparison is exact again."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable

import evonb
from evonb.iceberg import sync

pytestmark = pytest.mark.spark


def test_null_list_and_map_values(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id int not null, m map<string, struct<x:int>>, "
                           "l array<struct<x:int>>", primary_key="id")
    t.write(spark.sql("select 1 id, cast(null as map<string, struct<x:int>>) m, "
                      "cast(null as array<struct<x:int>>) l union all "
                      "select 2, map('a', named_struct('x', 1)), array(named_struct('x', 2))"))
    files = [f for f in t.root.rglob("*.parquet")]
    stored = sorted(pq.read_table(files[0], columns=["id", "m", "l"]).to_pylist(),
                    key=lambda r: r["id"])
    assert stored[0] == {"id": 1, "m": None, "l": None}  # the file holds nulls
    evonb_rows = sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert evonb_rows[0] == {"id": 1, "m": None, "l": None}
    ice = StaticTable.from_metadata(sync(t).metadata_file)
    got = sorted(ice.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got[0] == {"id": 1, "m": [], "l": []}  # pyiceberg's defect, see the docstring
    assert got[1] == evonb_rows[1] == {"id": 2, "m": [("a", {"x": 1})], "l": [{"x": 2}]}
