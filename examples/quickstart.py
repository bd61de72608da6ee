"""evonb quickstart: create a table on local Spark, evolve its schema, read it back.

Run with ``make quickstart`` (or ``python examples/quickstart.py [folder]``). It prints each step
and leaves the table in ``quickstart-output/trips`` for you to look at.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import evonb
from evonb.schema import Schema, SchemaUpdate, diff


def main(out: Path) -> None:
    # 1. The pure schema core: IDs on every column, changes staged and applied at once.
    s1 = Schema.from_ddl("id bigint not null, name string, loc struct<lat:double,lon:double>")
    s2 = (SchemaUpdate(s1)
          .add_column("loc.alt", "double", after="lat")
          .rename_column("name", "full_name")
          .apply())
    print("Schema before:\n" + str(s1), "\nSchema after:\n" + str(s2), sep="\n")
    print(diff(s1, s2), end="\n\n")

    # 2. A table on local Spark (the example of Hudi's "Schema Evolution in Action").
    spark = evonb.session()
    path = out / "trips"
    shutil.rmtree(path, ignore_errors=True)
    trips = evonb.create_table(
        path,
        "rowId string, partitionId string, preComb bigint, name string, versionId string, "
        "intToLong int",
        primary_key="rowId", precombine="preComb", partition_by="partitionId",
    )
    cols = "rowId string, partitionId string, preComb long, name string, versionId string"
    trips.write(spark.createDataFrame(
        [("row_1", "part_0", 0, "bob", "v_0", 0), ("row_2", "part_0", 0, "john", "v_0", 0),
         ("row_3", "part_0", 0, "tom", "v_0", 0)],
        cols + ", intToLong int"), "upsert")
    first = trips.history()[-1]
    # The incoming data widens intToLong to bigint and brings a new column: the schema evolves.
    trips.write(spark.createDataFrame(
        [("row_2", "part_0", 5, "john", "v_3", 3, "newField_1"),
         ("row_5", "part_0", 5, "maroon", "v_2", 2, "newField_1"),
         ("row_9", "part_0", 5, "michael", "v_2", 2, "newField_1")],
        cols + ", intToLong long, newField string"), "upsert")
    print("After two upserts (schema evolved on write):")
    trips.read().orderBy("rowId").show()

    # 3. DDL changes metadata only: rename, drop and re-add with a read default.
    change = trips.alter(
        "ALTER TABLE trips RENAME COLUMN name TO rider;"
        "ALTER TABLE trips DROP COLUMN versionId;"
        "ALTER TABLE trips ADD COLUMNS (versionId int NOT NULL DEFAULT 999 COMMENT 're-added')"
    )
    print(change, end="\n\n")
    latest = trips.read().orderBy("rowId")
    latest.show()

    # 4. Time travel: the first commit, in its own schema and in today's.
    print(f"As of {first.instant}, in that commit's schema:")
    trips.read(as_of=first.instant).orderBy("rowId").show()
    print("The same commit, in today's schema:")
    trips.read(as_of=first.instant, schema="latest").orderBy("rowId").show()
    print(trips.history())

    rows = [r.asDict() for r in latest.collect()]
    (out / "quickstart-result.txt").write_text(
        str(change) + "\n\n" + "\n".join(str(r) for r in rows) + "\n", encoding="utf-8")
    print(f"\nResult saved to {out / 'quickstart-result.txt'}")


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "quickstart-output")
    target.mkdir(parents=True, exist_ok=True)
    main(target.resolve())
