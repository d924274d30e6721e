"""A Kafka cluster's own parts: its release (``kafka_release``), the address plan (``topology``), each
node's files (``render``), the feature levels a release is formatted at (``feature_levels``) and what
healthy means (``health``)."""
