"""Each workload kind's part of a run as one object (``base.KindRun``), and which kind has which (``table``)."""
