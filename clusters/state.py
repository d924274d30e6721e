"""The record a running cluster leaves on disk (one per backend), so another process can find and stop it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness.base.paths import state_dir
from harness.rundir.runfolder import write_json


@dataclass
class ClusterRecord:
    backend: str
    cluster_id: str
    run_dir: str
    kafka_version: str
    net: int
    port_base: int
    api_port: int
    #: The process that owns the cluster and will stop it; None = detached (``eos-chaos cluster up``).
    owner_pid: int | None
    toxiproxy_pid: int | None = None
    node_pids: dict[str, int] = field(default_factory=dict)
    kafka_libs: str = ""
    toxiproxy_bin: str = ""
    #: local backend: the wire proxy (clusters/kwire) and its binary
    wire_pid: int | None = None
    kwire_bin: str = ""
    java: str = ""
    overrides: dict[str, str] = field(default_factory=dict)
    #: compose backend: the Compose project and the images it runs.
    project: str = ""
    images: dict[str, str] = field(default_factory=dict)
    #: the transaction.version its storage was formatted at; None: the Kafka release's default
    transaction_version: int | None = None


def record_path(backend: str) -> Path:
    return state_dir() / f"{backend}.json"


def save(record: ClusterRecord) -> None:
    """Atomically (temp file + rename): a crash never leaves half a record."""
    path = record_path(record.backend)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, asdict(record))


def load(backend: str) -> ClusterRecord | None:
    path = record_path(backend)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except ValueError:
        path.unlink(missing_ok=True)
        return None
    return ClusterRecord(**data)


#: Every backend that leaves a record (``clusters.backends.Backend``'s values).
BACKENDS = ("local", "compose")


#: pytest-xdist workers record their clusters in ``<state>/xdist-<worker>/`` (harness/pytest_plugin/__init__.py).
WORKER_PREFIX = "xdist-"


def family() -> list[Path]:
    """Every state folder whose clusters run on this machine beside ours: the main one and each
    xdist worker's. A start reclaiming leftovers must spare a cluster any of them records (a
    worker's ``--eos-keep`` cluster is detached, and claimed only by its worker's record)."""
    here = state_dir()
    root = here.parent if here.name.startswith(WORKER_PREFIX) else here
    return [root, *sorted(root.glob(f"{WORKER_PREFIX}*"))]


def claimed(backend: str) -> set[str]:
    """The cluster ids the state family records for ``backend``."""
    ids: set[str] = set()
    for folder in family():
        try:
            ids.add(str(json.loads((folder / f"{backend}.json").read_text())["cluster_id"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # no record there, or a broken one (its own load removes it)
    return ids


def clear(backend: str, cluster_id: str | None = None) -> None:
    """Remove the record (only if it is still ours when ``cluster_id`` is given)."""
    current = load(backend)
    if current is not None and (cluster_id is None or current.cluster_id == cluster_id):
        record_path(backend).unlink(missing_ok=True)
