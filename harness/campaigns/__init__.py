"""Many runs: soak, matrix, the smoke run of `make run`, the checker's selftest."""
