"""eos-chaos harness: workloads, history, checker, runner, CLI."""
