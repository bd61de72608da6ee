"""Setting up a read looks its files up on the driver: no Spark job before an action, whatever
the number of files (Spark lists more than 32 paths with a job of its own unless told not to;
the timeline already knows every file)."""

from __future__ import annotations

import evonb


def test_a_read_of_many_files_starts_no_job(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id bigint, v string",
                           properties={"evonb.write.target.file.bytes": "0"})
    t.write(spark.range(0, 400, 1, 40).selectExpr("id", "cast(id as string) as v"))
    t.alter("ALTER TABLE t ADD COLUMN n int DEFAULT 7")
    assert len(t.snapshot().files) == 40
    spark.sparkContext.setJobGroup("read-setup", "read setup")
    try:
        tracker = spark.sparkContext.statusTracker()
        df = t.read()
        assert tracker.getJobIdsForGroup("read-setup") == []
        assert df.count() == 400 and df.filter("n = 7").count() == 400
        assert tracker.getJobIdsForGroup("read-setup") != []
    finally:
        spark.sparkContext.setJobGroup("", "")


def test_reads_of_one_snapshot_reuse_spark_s_relation(spark, warehouse):
    """The relation over a snapshot's files (Spark's listing and analysis) is made once; a new
    commit changes the files, so the next read lists them afresh and sees the new rows."""
    from evonb.spark import columns

    t = evonb.create_table(warehouse / "t", "id bigint, v string")
    t.write(spark.range(0, 10).selectExpr("id", "cast(id as string) as v"))
    t.read()
    kept = dict(columns._RELATIONS)
    first, second = t.read(), t.read()
    assert dict(columns._RELATIONS).keys() == kept.keys()  # nothing new: reused
    assert first.count() == second.count() == 10
    t.write(spark.range(10, 15).selectExpr("id", "cast(id as string) as v"))
    assert t.read().count() == 15
    assert len(set(columns._RELATIONS) - set(kept)) >= 1
    t.alter("ALTER TABLE t RENAME COLUMN v TO w")
    assert sorted(r.w for r in t.read().collect()) == sorted(str(i) for i in range(15))
