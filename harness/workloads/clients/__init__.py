"""Implementations of the ``Client`` protocol (harness/workloads/client.py), one module per client
library: ``confluent`` (confluent-kafka / librdkafka)."""
