"""A user's own PySpark Structured Streaming job (``spark_copier.py``), started as an ``app`` by its
file (``{python} spark_copier.py``), as a team would start theirs: docs/APPS.md."""
