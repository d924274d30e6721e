"""A run's standalone Spark cluster (``standalone``, docs/SPARK.md) and Spark's Kafka connector jars
(``spark_jars``)."""
