package org.evonb.spark;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.List;

import org.apache.avro.LogicalType;
import org.apache.avro.Schema;
import org.apache.avro.file.DataFileReader;
import org.apache.avro.file.FileReader;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.io.DatumReader;
import org.apache.avro.io.Decoder;
import org.apache.avro.mapred.FsInput;
import org.apache.avro.util.Utf8;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.TaskContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.avro.AvroFileFormat;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.SpecificInternalRow;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.util.SerializableConfiguration;

import scala.Function1;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;

/**
 * Spark's Avro source with a lean decoder for evonb's merge-on-read log blocks: each record is
 * decoded straight from the file's own (writer) schema into one reused row, with no
 * intermediate Avro record and no schema resolution. Fields the query does not read are
 * skipped.
 *
 * <p>It reads flat records only: every column the query reads must be a top-level field of
 * type boolean, int (or date), long (or a timestamp), float, double, string or bytes,
 * optionally in a union with null, matching the Spark type asked for (timestamps in
 * milliseconds are scaled to microseconds). A column the file does not have reads null.
 * evonb picks this source only for such reads; anything else fails the read with the name of
 * the column. Dates and timestamps are read as written (no rebasing).
 */
public class LogBlockAvro extends AvroFileFormat {
  private static final long serialVersionUID = 1L;

  @Override
  public String shortName() {
    return "evonb-avro-blocks";
  }

  @Override
  public String toString() {
    return "EvonbAvroBlocks";
  }

  @Override
  public Function1<PartitionedFile, Iterator<InternalRow>> buildReader(
      SparkSession spark, StructType dataSchema, StructType partitionSchema,
      StructType requiredSchema, Seq<Filter> filters, Map<String, String> options,
      Configuration hadoopConf) {
    Broadcast<SerializableConfiguration> conf = spark.sparkContext().broadcast(
        new SerializableConfiguration(hadoopConf),
        scala.reflect.ClassTag$.MODULE$.apply(SerializableConfiguration.class));
    return new Reader(conf, requiredSchema);
  }

  /** Opens one file (or the blocks of one split of it) and decodes its records. */
  static final class Reader extends AbstractFunction1<PartitionedFile, Iterator<InternalRow>>
      implements Serializable {
    private static final long serialVersionUID = 1L;
    private final Broadcast<SerializableConfiguration> conf;
    private final StructType schema;

    Reader(Broadcast<SerializableConfiguration> conf, StructType schema) {
      this.conf = conf;
      this.schema = schema;
    }

    @Override
    public Iterator<InternalRow> apply(PartitionedFile file) {
      try {
        RowReader rows = new RowReader(schema);
        FileReader<InternalRow> reader = DataFileReader.openReader(
            new FsInput(file.toPath(), conf.value().value()), rows);
        TaskContext context = TaskContext.get();
        if (context != null) {
          context.addTaskCompletionListener(
              (org.apache.spark.util.TaskCompletionListener) c -> close(reader));
        }
        reader.sync(file.start());
        long end = file.start() + file.length();
        return new AbstractIterator<InternalRow>() {
          private InternalRow row;

          @Override
          public boolean hasNext() {
            try {
              return reader.hasNext() && !reader.pastSync(end);
            } catch (IOException e) {
              throw new UncheckedIOException(e);
            }
          }

          @Override
          public InternalRow next() {
            try {
              row = reader.next(row);
              return row;
            } catch (IOException e) {
              throw new UncheckedIOException(e);
            }
          }
        };
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    private static void close(FileReader<InternalRow> reader) {
      try {
        reader.close();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  /** Decodes records of the file's schema into a row of the query's columns. */
  static final class RowReader implements DatumReader<InternalRow> {
    private final StructType schema;
    private final SpecificInternalRow row;
    private Schema[] fields;  // the writer's field schemas
    private int[] target;     // each writer field's column, or -1
    private int[] nullBranch; // each writer field's branch that is null, or -1
    private int[] kind;       // how each read field is decoded
    private int[] unset;      // columns the file does not have
    private final Utf8[] text;

    private static final int BOOLEAN = 0;
    private static final int INT = 1;
    private static final int LONG = 2;
    private static final int MILLIS = 3;
    private static final int FLOAT = 4;
    private static final int DOUBLE = 5;
    private static final int STRING = 6;
    private static final int BYTES = 7;

    RowReader(StructType schema) {
      this.schema = schema;
      this.row = new SpecificInternalRow(schema);
      this.text = new Utf8[schema.length()];
    }

    @Override
    public void setSchema(Schema writer) {
      List<Schema.Field> all = writer.getFields();
      fields = new Schema[all.size()];
      target = new int[all.size()];
      nullBranch = new int[all.size()];
      kind = new int[all.size()];
      boolean[] found = new boolean[schema.length()];
      for (int i = 0; i < all.size(); i++) {
        Schema.Field f = all.get(i);
        fields[i] = f.schema();
        target[i] = -1;
        nullBranch[i] = -1;
        int at = indexOf(f.name());
        if (at < 0) {
          continue;
        }
        found[at] = true;
        target[i] = at;
        Schema value = f.schema();
        if (value.getType() == Schema.Type.UNION) {
          List<Schema> branches = value.getTypes();
          if (branches.size() != 2) {
            throw unsupported(f.name(), value);
          }
          int nulls = branches.get(0).getType() == Schema.Type.NULL ? 0
              : branches.get(1).getType() == Schema.Type.NULL ? 1 : -1;
          if (nulls < 0) {
            throw unsupported(f.name(), value);
          }
          nullBranch[i] = nulls;
          value = branches.get(1 - nulls);
        }
        fields[i] = value;
        kind[i] = kindOf(f.name(), value, schema.fields()[at].dataType());
      }
      int missing = 0;
      for (boolean b : found) {
        missing += b ? 0 : 1;
      }
      unset = new int[missing];
      for (int i = 0, j = 0; i < found.length; i++) {
        if (!found[i]) {
          unset[j++] = i;
        }
      }
    }

    private int indexOf(String name) {
      StructField[] f = schema.fields();
      for (int i = 0; i < f.length; i++) {
        if (f[i].name().equals(name)) {
          return i;
        }
      }
      return -1;
    }

    private static IllegalStateException unsupported(String name, Schema schema) {
      return new IllegalStateException("evonb: the log block reader cannot read column "
          + name + " of Avro type " + schema + "; set evonb.mor.read.jvm=false on the table");
    }

    private static int kindOf(String name, Schema value, DataType type) {
      LogicalType logical = value.getLogicalType();
      String lt = logical == null ? "" : logical.getName();
      switch (value.getType()) {
        case BOOLEAN:
          if (type instanceof BooleanType) {
            return BOOLEAN;
          }
          break;
        case INT:
          if ((type instanceof IntegerType && lt.isEmpty())
              || (type instanceof DateType && lt.equals("date"))) {
            return INT;
          }
          break;
        case LONG:
          if (type instanceof LongType && lt.isEmpty()) {
            return LONG;
          }
          boolean ts = type instanceof TimestampType;
          boolean ntz = type instanceof TimestampNTZType;
          if ((ts && lt.equals("timestamp-micros"))
              || (ntz && lt.equals("local-timestamp-micros"))) {
            return LONG;
          }
          if ((ts && lt.equals("timestamp-millis"))
              || (ntz && lt.equals("local-timestamp-millis"))) {
            return MILLIS;
          }
          break;
        case FLOAT:
          if (type instanceof FloatType) {
            return FLOAT;
          }
          break;
        case DOUBLE:
          if (type instanceof DoubleType) {
            return DOUBLE;
          }
          break;
        case STRING:
          if (type instanceof StringType && lt.isEmpty()) {
            return STRING;
          }
          break;
        case BYTES:
          if (type instanceof BinaryType && lt.isEmpty()) {
            return BYTES;
          }
          break;
        default:
          break;
      }
      throw unsupported(name, value);
    }

    @Override
    public InternalRow read(InternalRow reuse, Decoder in) throws IOException {
      for (int c : unset) {
        row.setNullAt(c);
      }
      for (int i = 0; i < fields.length; i++) {
        int at = target[i];
        if (at < 0) {
          GenericDatumReader.skip(fields[i], in);
          continue;
        }
        if (nullBranch[i] >= 0 && in.readIndex() == nullBranch[i]) {
          row.setNullAt(at);
          continue;
        }
        switch (kind[i]) {
          case BOOLEAN:
            row.setBoolean(at, in.readBoolean());
            break;
          case INT:
            row.setInt(at, in.readInt());
            break;
          case LONG:
            row.setLong(at, in.readLong());
            break;
          case MILLIS:
            row.setLong(at, Math.multiplyExact(in.readLong(), 1000L));
            break;
          case FLOAT:
            row.setFloat(at, in.readFloat());
            break;
          case DOUBLE:
            row.setDouble(at, in.readDouble());
            break;
          case STRING:
            Utf8 s = in.readString(text[at]);
            text[at] = s;
            row.update(at, UTF8String.fromBytes(s.getBytes(), 0, s.getByteLength()));
            break;
          default:
            ByteBuffer b = in.readBytes(null);
            byte[] copy = new byte[b.remaining()];
            b.get(copy);
            row.update(at, copy);
            break;
        }
      }
      return row;
    }
  }
}
