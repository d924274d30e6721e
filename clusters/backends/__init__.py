"""The ``Cluster`` protocol (``protocol``) and its two backends, ``local`` and ``compose/``, made and
attached in one place (``backends``), with what they share: the cluster record (``state``), process
tags and control (``procs``), and what a dead run left (``reclaim``)."""
