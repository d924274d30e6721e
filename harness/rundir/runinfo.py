"""What a run folder records about how it was made: the versions of everything under test and the
exact command that runs the same scenario again (``journal.json``: ``versions``, ``command``)."""

from __future__ import annotations

import platform
import shlex
from importlib import metadata
from typing import Any


def _dist(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def versions(kafka_version: str | None, libraries: dict[str, str | None] | None = None) -> dict[str, Any]:
    """Kafka, the clients and the harness, as the report shows them. ``libraries``: the workloads'
    client libraries by name, each with the release it was resolved to (None: an installed Python
    package of that name, whose version is read here), so a Java or Go run's client release is on record too."""
    import confluent_kafka

    clients = {name: version or _dist(name) for name, version in (libraries or {}).items()}
    return {
        "clients": clients,
        "kafka": kafka_version,
        "confluent_kafka": _dist("confluent-kafka"),
        "librdkafka": confluent_kafka.libversion()[0],
        "pyspark": _dist("pyspark"),
        "python": platform.python_version(),
        "eos_chaos": _dist("eos-chaos"),
    }


def rerun_command(source: str, backend: str, seed: int, duration: float, kafka_version: str | None,
                  transaction_version: int | None = None, producers: int | None = None) -> str:
    """``eos-chaos run`` with everything that decides the schedule and the cluster spelled out
    (``producers``: what every txn-producer ran, when ``--producers`` may have set it)."""
    args = ["eos-chaos", "run", source, "--backend", backend, "--seed", str(seed), "--duration", f"{duration:g}"]
    if kafka_version:
        args += ["--kafka-version", kafka_version]
    if transaction_version is not None:
        args += ["--transaction-version", str(transaction_version)]
    if producers is not None:
        args += ["--producers", str(producers)]
    return shlex.join(args)
