"""The ``Cluster`` protocol (``protocol``) and its backends, ``local/``, ``compose/`` and ``external/``,
made and attached in one place (``backends``), with what they share: the cluster record (``state``),
process tags and control (``procs``), what a dead run left (``reclaim``), Toxiproxy and the wire proxy
as local processes (``sidecars``), and what the two that start their own cluster have in common
(``built_cluster``)."""
