"""Benchmarks behind `eos-chaos bench`."""
