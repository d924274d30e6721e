"""The ``local`` backend: three Kafka JVMs, Toxiproxy and the wire proxy as processes of this machine.
``local_cluster.LocalCluster`` composes its files (``layout``), its brokers (``nodes``) and its
proxies (``proxies``)."""

from clusters.backends.local.local_cluster import LocalCluster, reclaim_orphans

__all__ = ["LocalCluster", "reclaim_orphans"]
