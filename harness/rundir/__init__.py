"""A run folder's files: names and atomic writes, the journal, the run's facts."""
