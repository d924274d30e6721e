"""The ``compose`` backend: the same cluster as containers under Docker Compose."""
