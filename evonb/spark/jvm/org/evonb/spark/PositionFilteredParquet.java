package org.evonb.spark;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.JoinedRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.vectorized.OffHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

import scala.Function1;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * Spark's Parquet source with one more column, {@code _evo_deleted}: true for the rows of a
 * base file that its merge-on-read log blocks replace or delete, by position.
 *
 * <p>The positions come in the option {@code evonb.positions}: base64 of a little-endian
 * record, the number of files, then for each its name (int length, UTF-8 bytes), its number
 * of rows (long) and its bitmap (int number of words, then 64 rows a word). A file not named
 * there fails the read. The column may stand anywhere in the schema (Spark puts the
 * temporary column of {@code _metadata.row_index} after it when a query also asks for the
 * row index), and the table must not be partitioned by directories.
 *
 * <p>Each row's position is the row index Spark's Parquet reader computes (the column behind
 * {@code _metadata.row_index}), so files are split and filters pushed down as for any Parquet
 * read. A position at or past the file's planned number of rows fails the read.
 */
public class PositionFilteredParquet extends ParquetFileFormat {
  private static final long serialVersionUID = 1L;

  /** The column this source adds. */
  public static final String DELETED = "_evo_deleted";
  /** The option that carries the positions. */
  public static final String POSITIONS = "evonb.positions";

  @Override
  public String shortName() {
    return "evonb-parquet";
  }

  @Override
  public String toString() {
    return "EvonbParquet";
  }

  @Override
  public Function1<PartitionedFile, Iterator<InternalRow>> buildReaderWithPartitionValues(
      SparkSession spark, StructType dataSchema, StructType partitionSchema,
      StructType requiredSchema, Seq<Filter> filters, Map<String, String> options,
      Configuration hadoopConf) {
    int at = indexOf(requiredSchema);
    if (at < 0) {  // the column is not read: the file's rows as they are
      return super.buildReaderWithPartitionValues(spark, dataSchema, partitionSchema,
          requiredSchema, filters, options, hadoopConf);
    }
    if (partitionSchema.length() > 0) {
      throw new IllegalArgumentException(DELETED + " is read with no partition columns");
    }
    if (options.get(POSITIONS).isEmpty()) {
      throw new IllegalArgumentException("the option " + POSITIONS + " is missing");
    }
    Positions positions = Positions.decode(options.get(POSITIONS).get());
    // The file is read without the column, with the reader's row index: Spark's own when the
    // query asks for it too (``_metadata.row_index``, a column after this one), else one
    // added last. Each output column then comes from the read, and this one from the index.
    String rowIndex = ParquetFileFormat.ROW_INDEX_TEMPORARY_COLUMN_NAME();
    StructType inner = without(requiredSchema);
    int index = java.util.Arrays.asList(inner.fieldNames()).indexOf(rowIndex);
    if (index < 0) {
      inner = inner.add(rowIndex, DataTypes.LongType, true);
      index = inner.length() - 1;
    }
    int[] from = new int[requiredSchema.length()];
    for (int j = 0; j < from.length; j++) {
      from[j] = j < at ? j : j == at ? -1 : j - 1;
    }
    Function1<PartitionedFile, Iterator<InternalRow>> read =
        super.buildReaderWithPartitionValues(spark, without(dataSchema),
            partitionSchema, inner, filters, options, hadoopConf);
    boolean offHeap = spark.conf().get("spark.sql.columnVector.offheap.enabled", "false")
        .trim().equalsIgnoreCase("true");
    return new Reader(read, positions, new Layout(requiredSchema, from, index), offHeap);
  }

  /** Where each output column comes from: ``from[j]``, a column of the read (-1: the flag),
   * and which column of the read is the row index. */
  static final class Layout implements Serializable {
    private static final long serialVersionUID = 1L;
    final StructType schema;
    final int[] from;
    final int index;

    Layout(StructType schema, int[] from, int index) {
      this.schema = schema;
      this.from = from;
      this.index = index;
    }
  }

  private static int indexOf(StructType schema) {
    String[] names = schema.fieldNames();
    for (int i = 0; i < names.length; i++) {
      if (names[i].equals(DELETED)) {
        return i;
      }
    }
    return -1;
  }

  private static StructType without(StructType schema) {
    List<StructField> kept = new ArrayList<>();
    for (StructField f : schema.fields()) {
      if (!f.name().equals(DELETED)) {
        kept.add(f);
      }
    }
    return DataTypes.createStructType(kept);
  }

  /** The bitmaps of the files, by file name. */
  static final class Positions implements Serializable {
    private static final long serialVersionUID = 1L;
    final HashMap<String, long[]> bits = new HashMap<>();
    final HashMap<String, Long> rows = new HashMap<>();

    static Positions decode(String text) {
      ByteBuffer buf = ByteBuffer.wrap(Base64.getDecoder().decode(text))
          .order(ByteOrder.LITTLE_ENDIAN);
      Positions p = new Positions();
      int files = buf.getInt();
      for (int i = 0; i < files; i++) {
        byte[] name = new byte[buf.getInt()];
        buf.get(name);
        String key = new String(name, StandardCharsets.UTF_8);
        p.rows.put(key, buf.getLong());
        long[] words = new long[buf.getInt()];
        buf.asLongBuffer().get(words);
        buf.position(buf.position() + 8 * words.length);
        p.bits.put(key, words);
      }
      return p;
    }
  }

  /** Reads one file and sets the column from its bitmap, row by row or batch by batch. */
  static final class Reader extends AbstractFunction1<PartitionedFile, Iterator<InternalRow>>
      implements Serializable {
    private static final long serialVersionUID = 1L;
    private final Function1<PartitionedFile, Iterator<InternalRow>> read;
    private final Positions positions;
    private final Layout layout;
    private final boolean offHeap;

    Reader(Function1<PartitionedFile, Iterator<InternalRow>> read, Positions positions,
           Layout layout, boolean offHeap) {
      this.read = read;
      this.positions = positions;
      this.layout = layout;
      this.offHeap = offHeap;
    }

    @Override
    public Iterator<InternalRow> apply(PartitionedFile file) {
      String name = file.toPath().getName();
      long[] words = positions.bits.get(name);
      if (words == null) {
        throw new IllegalStateException("evonb: no positions for base file " + name
            + "; read the table again");
      }
      long planned = positions.rows.get(name);
      // Spark passes batches through this iterator as they are (its type is erased).
      @SuppressWarnings({"unchecked", "rawtypes"})
      Iterator<InternalRow> marked = (Iterator) new Marked(read.apply(file), words, planned,
          name, layout, offHeap);
      return marked;
    }
  }

  /** The rows of one file with the column set. */
  static final class Marked extends AbstractIterator<Object> {
    private final Iterator<?> rows;
    private final long[] words;
    private final long planned;
    private final String name;
    private final Layout layout;
    private final boolean offHeap;
    private WritableColumnVector vector;
    private int capacity;
    private final GenericInternalRow flag = new GenericInternalRow(1);
    private final JoinedRow joined = new JoinedRow();
    private UnsafeProjection project;

    Marked(Iterator<?> rows, long[] words, long planned, String name, Layout layout,
           boolean offHeap) {
      this.rows = rows;
      this.words = words;
      this.planned = planned;
      this.name = name;
      this.layout = layout;
      this.offHeap = offHeap;
    }

    @Override
    public boolean hasNext() {
      return rows.hasNext();
    }

    private boolean deleted(long row) {
      if (row < 0 || row >= planned) {
        throw new IllegalStateException("evonb: base file " + name + " has a row at position "
            + row + ", past the " + planned + " rows planned; read the table again");
      }
      return (words[(int) (row >>> 6)] & (1L << (row & 63))) != 0;
    }

    @Override
    public Object next() {
      Object item = rows.next();
      int[] from = layout.from;
      if (item instanceof ColumnarBatch batch) {
        int n = batch.numRows();
        ColumnVector index = batch.column(layout.index);
        WritableColumnVector v = vector(n);
        v.reset();
        v.putNotNulls(0, n);
        for (int i = 0; i < n; i++) {
          v.putBoolean(i, deleted(index.getLong(i)));
        }
        ColumnVector[] vectors = new ColumnVector[from.length];
        for (int j = 0; j < from.length; j++) {
          vectors[j] = from[j] < 0 ? v : batch.column(from[j]);
        }
        return new ColumnarBatch(vectors, n);
      }
      InternalRow row = (InternalRow) item;
      flag.setBoolean(0, deleted(row.getLong(layout.index)));
      return projection(row.numFields()).apply(joined.apply(row, flag));
    }

    /** The output columns from the read's row, the flag after it in the joined row. */
    private UnsafeProjection projection(int width) {
      if (project == null) {
        List<Expression> columns = new ArrayList<>();
        StructField[] fields = layout.schema.fields();
        for (int j = 0; j < layout.from.length; j++) {
          columns.add(layout.from[j] < 0
              ? new BoundReference(width, DataTypes.BooleanType, false)
              : new BoundReference(layout.from[j], fields[j].dataType(), fields[j].nullable()));
        }
        project = UnsafeProjection.create(CollectionConverters.asScala(columns).toSeq());
      }
      return project;
    }

    private WritableColumnVector vector(int n) {
      if (vector == null || capacity < n) {
        if (vector != null) {
          vector.close();
        }
        capacity = Math.max(n, 4096);
        vector = offHeap ? new OffHeapColumnVector(capacity, DataTypes.BooleanType)
            : new OnHeapColumnVector(capacity, DataTypes.BooleanType);
        if (offHeap) {
          WritableColumnVector owned = vector;
          TaskContext context = TaskContext.get();
          if (context != null) {
            context.addTaskCompletionListener(
                (org.apache.spark.util.TaskCompletionListener) c -> owned.close());
          }
        }
      }
      return vector;
    }
  }
}
