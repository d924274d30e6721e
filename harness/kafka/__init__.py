"""Kafka as the harness sees it from outside the workloads: topics and their leaders
(``admin``), and whole-topic reads after a run (``reads``: the final scans, LSO lag)."""
