"""What the write path and the merge-on-read module read of a Spark table and of a write.

:class:`~evonb.spark.table.SparkTable` runs its writes through
:class:`~evonb.spark.writes.WriteJob`, which hands merge-on-read deltas to
:mod:`evonb.spark.mor`; both take the table (and ``mor`` the job) as arguments. They name what
they use with these protocols instead of the classes, so neither refers back to the module
above it (not even in a type hint) and the modules of the package form no cycle.
``SparkTable`` and ``WriteJob`` have every member listed here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from evonb.schema.evolution import SchemaUpdate
from evonb.schema.schema import Schema
from evonb.table.config import TableConfig
from evonb.table.handle import CommitRef, TableHandle
from evonb.table.layout import Layout
from evonb.table.read_plan import Via
from evonb.table.snapshot import DataFile, Snapshot

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession


class SparkTableHandle(TableHandle, Protocol):
    """A table with its Spark engine, as its writes and merge-on-read reads use it."""

    reads_in_driver: bool
    """Whether :meth:`stored_rows_reader` gives a reader."""

    @property
    def spark(self) -> SparkSession:
        """The session Spark work on this table runs on (refused in object storage)."""
        ...

    def spark_session(self) -> SparkSession:
        """The session given to this table, else the managed one."""
        ...

    def snapshot(self, as_of: CommitRef | None = None) -> Snapshot:
        """The live files and schema version as of a commit (default: the latest)."""
        ...

    def physical_query(self, schema: Schema, layout: Layout) -> Schema:
        """``schema`` with physical names."""
        ...

    def reconcile_write(self, base: Schema, incoming: Schema) -> SchemaUpdate:
        """The schema change a write of ``incoming`` makes to ``base``."""
        ...

    def locate_files(self, urls: Sequence[str], files: Sequence[DataFile]) -> list[DataFile]:
        """Spark's ``_metadata.file_path`` values mapped back to data files."""
        ...

    def read_object_files(self, files: Sequence[DataFile], query: Schema, *,
                          meta: bool = False, with_file: bool = False,
                          with_position: bool = False,
                          logs: Sequence[DataFile] | None = None,
                          snapshot: Snapshot | None = None) -> DataFrame:
        """The files of a table in object storage (of ``snapshot``, else the latest), read
        for Spark."""
        ...

    def stored_rows_reader(self, query: Schema, *, meta: bool = False,
                           snapshot: Snapshot | None = None
                           ) -> Callable[[DataFile], pa.Table] | None:
        """A reader, in this process, of the rows stored in one data file (of ``snapshot``,
        else the latest); None without one."""
        ...

    def stored_batches_reader(self, query: Schema, *, meta: bool = False,
                              snapshot: Snapshot | None = None
                              ) -> Callable[[DataFile], Iterator[pa.Table]] | None:
        """The same reader, a table at a time; None without one."""
        ...

    def group_rows_reader(self, query: Schema, *, snapshot: Snapshot | None = None
                          ) -> Callable[[DataFile, Sequence[DataFile]], pa.Table] | None:
        """A reader, in this process, of one file group's live rows (a base file merged with
        its log blocks); None without one."""
        ...


class WriteJobHandle(Protocol):
    """One write, as the merge-on-read delta path uses it."""

    table: SparkTableHandle
    mode: str
    """``insert``, ``upsert``, ``delete`` or ``overwrite``."""
    spark: SparkSession
    config: TableConfig
    incoming_rows: int | None
    """The incoming rows, when the job that checked them counted them."""
    collected: pa.Table | None
    """A small delta's incoming rows, collected to the driver."""
    key_lookup: dict[str, int] | None

    def key_candidates(self, live: Sequence[DataFile]) -> list[DataFile]:
        """The live base files that may hold incoming keys."""
        ...

    def rows_frame(self, shaped: DataFrame) -> DataFrame:
        """The incoming rows for a Spark job: the collected rows when the driver collected
        them, else ``shaped`` (computed once)."""
        ...

    def key_columns(self, target: Schema, layout: Layout) -> dict[int, tuple[str, Any]]:
        """The key columns new files of ``target`` record statistics for."""
        ...

    def key_filter(self, layout: Layout) -> Column | None:
        """A filter on the physical key columns keeping the incoming keys' range."""
        ...

    def read_stored(self, files: Sequence[DataFile], query: Schema, *, meta: bool = False,
                    with_file: bool = False, with_position: bool = False,
                    via: Via | None = None) -> DataFrame:
        """Stored rows of ``files`` in ``query``'s columns (values through the types of
        ``via``: :func:`~evonb.table.read_plan.type_paths`)."""
        ...

    def write_data(self, df: DataFrame, **options: Any) -> list[DataFile]:
        """``df`` as data files of this write."""
        ...
