"""Tables: the timeline of commits, schema history, writes that evolve the schema, reads that
merge schemas by ID, time travel and incremental reads.

Storage modules (timeline, schema store, config, locks) are pure Python; ``Table`` runs its data
work on Spark.
"""

from evonb.table.convert import convert
from evonb.table.table import Table, create_table, open_table

__all__ = ["Table", "convert", "create_table", "open_table"]
