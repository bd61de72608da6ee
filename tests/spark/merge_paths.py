"""The merge paths of upserts and deletes, as the table properties that select each: for tests
that play one write on every path."""

from __future__ import annotations

SPARK_ONLY = {"evonb.write.driver_rewrite.bytes": "0"}
MERGE_PATHS: dict[str, tuple[str, dict[str, str]]] = {
    "cow-driver": ("cow", {}),  # copy-on-write rewritten by the driver in Arrow
    "cow-direct": ("cow", SPARK_ONLY),  # Spark: small candidates merged whole
    "cow-window": ("cow", SPARK_ONLY | {"evonb.write.direct_merge.bytes": "0"}),
    "cow-split": ("cow", SPARK_ONLY | {"evonb.write.direct_merge.bytes": "0",
                                       "evonb.write.split_merge.bytes": "0"}),
    # the incoming rows collected for the driver's path, whose limit on the stored side then
    # sends the write to Spark's merge with the collected rows
    "cow-collected": ("cow", {"evonb.write.driver_rewrite.bytes": "1"}),
    "mor-driver": ("mor", {}),  # merge-on-read keys looked up by the driver
    "mor-spark": ("mor", {"evonb.mor.driver_lookup.rows": "0"}),
    "mor-collected": ("mor", {"evonb.mor.driver_lookup.rows": "1"}),
}
"""Name -> (table type, table properties)."""
