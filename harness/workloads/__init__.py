"""Workloads: the kinds a scenario can run (``registry``), each an OS process of its own
(``txn_producer``, ``reader``, ``copier``, ``zombie``; the Spark job lives in ``harness.sparkjob``),
what they share (``common``: config, stop, one recorded transaction), the outcome rules
(``outcome``), and the client protocols (``client``) with their implementations (``clients/``)."""
