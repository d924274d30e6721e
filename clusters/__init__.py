"""eos-chaos clusters, one subpackage per part: ``builds`` (pins, and fetching and building with
Maven, javac and Go), ``kafka`` (a Kafka release, the address plan, configs, feature levels, health),
``toxiproxy`` and ``wire`` (the two proxies, each built and driven), ``spark`` (a run's standalone
Spark cluster and its connector jars), ``backends`` (the ``Cluster`` protocol, the local and compose
backends and what they share: the record, process tags, reclaim)."""
