"""What a run folder records about how it was made: the versions of everything under test and the
exact command that runs the same scenario again (``journal.json``: ``versions``, ``command``)."""

from __future__ import annotations

import functools
import hashlib
import platform
import shlex
import subprocess
from importlib import metadata
from pathlib import Path
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


#: What decides how a run goes, for ``harness_id``: the harness's, the faults' and the clusters' code,
#: and the wire proxy's Go source (it is built from it).
_SOURCE = (("harness", "*.py"), ("chaos", "*.py"), ("clusters", "*.py"), ("clusters", "*.go"))


@functools.cache
def harness_id() -> dict[str, str | None]:
    """Which eos-chaos made a record: its version, a digest of its source (``_SOURCE``, so two
    checkouts of one commit agree and an edited tree does not pass for its commit) and, in a git
    work tree, the commit. Shards of one table must agree on it (``eos-chaos matrix merge``)."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for top, pattern in _SOURCE:
        for path in sorted((root / top).rglob(pattern)):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return {"eos_chaos": _dist("eos-chaos"), "source": digest.hexdigest()[:16], "commit": _commit(root)}


def _commit(root: Path) -> str | None:
    """``git rev-parse HEAD`` in ``root`` (None outside a work tree or without git): for people to read."""
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def harness_name(h: dict[str, Any]) -> str:
    """``harness_id()`` as a phrase: ``0.1.0 (source 1a2b..., commit 3c4d...)``."""
    commit = f", commit {str(h['commit'])[:12]}" if h.get("commit") else ""
    return f"{h.get('eos_chaos') or 'unknown version'} (source {h.get('source')}{commit})"
