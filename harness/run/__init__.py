"""One run, start to verdict: the scenario, the workload processes, the runner, verdict.json."""
