"""The Spark adapter: the managed SparkSession and the Spark side of reads and writes."""
