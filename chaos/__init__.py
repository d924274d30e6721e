"""eos-chaos faults: the Toxiproxy client, the fault catalogue, schedules, heal-all."""
