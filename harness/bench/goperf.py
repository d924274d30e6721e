"""The Go clients' own producer loop in ``eos-chaos bench producer``: ``franz-go-perf[@VERSION]`` and
``sarama-perf[@VERSION]`` run the client bridge's binary as ``<bridge> perf ...``
(``harness/workloads/clients/go_src/common/perf.go``): the producer the bridge opens, with the settings it opens it
with, driven by a Go loop of transactions that prints ProducerPerformance's periodic lines. Beside
``franz-go@VERSION`` (our txn-producer through the bridge) it states what the bridge and the workload
cost per record, as ``producer-performance`` does for ``java@VERSION``. Names and the command here;
the run is ``harness.bench.producer``'s.
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson

from harness.bench.window import PRODUCER_PERFORMANCE
from harness.workloads.client import TRANSACTION_TIMEOUT_MS
from harness.workloads.clients import CLIENTS, Library, parse
from harness.workloads.clients.gobridge import GO_CLIENTS, client_producer_config

#: ``franz-go`` + this is the client's perf mode.
PERF_SUFFIX = "-perf"
#: How the perf names read in help and errors.
SPELLED = ", ".join(f"{n}{PERF_SUFFIX}[@VERSION]" for n in GO_CLIENTS)


def parse_perf(item: str) -> str | None:
    """``franz-go-perf[@VERSION]`` as ``franz-go-perf@VERSION`` (the client's default version when
    none is given); None for a name that is no perf name; ValueError saying what is allowed."""
    name, at, version = item.strip().partition("@")
    if not name.endswith(PERF_SUFFIX):
        return None
    base = name.removesuffix(PERF_SUFFIX)
    entry = CLIENTS.get(base)
    if base not in GO_CLIENTS or entry is None or entry.versions is None:
        raise ValueError(f"{item!r}: a perf mode (the client's own producer loop, no bridge) exists for the Go "
                         f"clients only: {SPELLED}")
    version = version if at else entry.versions.default
    if not re.fullmatch(entry.versions.pattern, version):
        raise ValueError(f"{item!r}: {version!r} is not a release version; expected "
                         f"{name}@{entry.versions.spelled}, e.g. {name}@{entry.versions.default}")
    return f"{name}@{version}"


def library_of(perf: str) -> Library:
    """The client library of a parsed perf name: ``franz-go-perf@1.22.3`` -> ``franz-go@1.22.3``."""
    name, _, version = perf.partition("@")
    return parse(f"{name.removesuffix(PERF_SUFFIX)}@{version}")


def is_perf(name: str) -> bool:
    return name.partition("@")[0].endswith(PERF_SUFFIX)


def native_of(producer: str) -> str | None:
    """The producer that is ``producer``'s client without our bridge and workload: ``franz-go@V`` ->
    ``franz-go-perf@V``, ``sarama@V`` -> ``sarama-perf@V``, ``java@V`` -> ``producer-performance``
    (Kafka's tool, on the kafka-clients of its own release); None for any other."""
    if is_perf(producer) or producer == PRODUCER_PERFORMANCE:
        return None
    lib = parse(producer)
    if lib.name in GO_CLIENTS:
        return f"{lib.name}{PERF_SUFFIX}@{lib.version}"
    return PRODUCER_PERFORMANCE if lib.entry.jvm else None


def perf_config(perf: str, bootstrap: str, txn_id: str) -> dict[str, object]:
    """The client settings of a perf run: those our txn-producer's bridge producer gets in ``bench
    producer`` (its default transaction timeout, no overrides)."""
    return client_producer_config(library_of(perf).name, bootstrap, txn_id, TRANSACTION_TIMEOUT_MS, {})


def perf_command(binary: Path, perf: str, bootstrap: str, topic: str, partitions: int, txn_id: str,
                 records_per_txn: int, record_bytes: int, seconds: float, interval_ms: int) -> list[str]:
    """``<bridge> perf ...``: transactions of ``records_per_txn`` records of ``record_bytes`` to random
    partitions of ``topic``, for at most ``seconds`` (the bench stops it once its lines cover the
    window), a periodic line every ``interval_ms``."""
    conf = orjson.dumps(perf_config(perf, bootstrap, txn_id)).decode()
    return [str(binary), "perf", "--config", conf, "--topic", topic, "--partitions", str(partitions),
            "--records-per-txn", str(records_per_txn), "--record-size", str(record_bytes),
            "--seconds", str(float(seconds)), "--reporting-interval", str(interval_ms)]
