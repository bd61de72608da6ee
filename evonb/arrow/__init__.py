"""Reading evonb tables into Arrow without Spark (no JVM): the same plans, merges and casts
as the Spark reader, evaluated with pyarrow (:mod:`evonb.arrow.reader`)."""
