"""Spark in the harness: the PySpark exactly-once job under test (``job``), its markers
(``markers``), and the Spark session both it and the checker's Spark engine run in (``session``)."""
