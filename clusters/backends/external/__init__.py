"""The ``external`` backend: a Kafka cluster the harness did not start, described by an inventory
file (inventory.py), reached through node commands (transport.py, lifecycle.py), checked before any
fault (probe.py), and every change on a node journaled so it can be undone (heal_journal.py)."""
