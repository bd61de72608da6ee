"""The table format: config, timeline of commits, schema versions and layouts, snapshots,
planning of reads, conflicts, recovery and checks. Pure Python, no engine: the Spark engine
(:mod:`evonb.spark`) and the Arrow reader (:mod:`evonb.arrow`) build on it, and
:mod:`evonb.api` puts them together in the :class:`~evonb.api.Table` users hold."""
