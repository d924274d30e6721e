"""The record a running cluster leaves on disk (one per backend), so another process can find and stop it."""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pydantic import ConfigDict, TypeAdapter, ValidationError

from harness.base.errors import ConfigError
from harness.base.paths import state_dir
from harness.rundir.runfolder import read_json_object, write_json

log = logging.getLogger(__name__)


@dataclass
class ClusterRecord:
    # a record's fields are checked as it loads (``load``): a field this version does not know means
    # another version of eos-chaos wrote it, about a cluster that may still run
    __pydantic_config__ = ConfigDict(extra="forbid")

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
    #: local backend: the wire proxy (clusters/wire/kwire) and its binary
    wire_pid: int | None = None
    kwire_bin: str = ""
    java: str = ""
    overrides: dict[str, str] = field(default_factory=dict)
    #: compose backend: the Compose project and the images it runs.
    project: str = ""
    images: dict[str, str] = field(default_factory=dict)
    #: the transaction.version its storage was formatted at; None: the Kafka release's default
    transaction_version: int | None = None
    #: local backend: the links between brokers go through the wire proxy too (``Topology.wire_between_brokers``)
    wire_between_brokers: bool = False
    #: external backend: the inventory file (absolute) and the digest of what it said at ``cluster up``
    inventory: str = ""
    inventory_digest: str = ""


def record_path(backend: str) -> Path:
    return state_dir() / f"{backend}.json"


def save(record: ClusterRecord) -> None:
    """Atomically (temp file + rename): a crash never leaves half a record."""
    path = record_path(record.backend)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, asdict(record))


def load(backend: str) -> ClusterRecord | None:
    """The backend's record; None when there is none. A file that is no JSON object (cut off, not
    text) is nobody's record: it is kept aside (``keep_aside``), said in a warning, and None. A
    JSON object that is not a record of this version is a ``ConfigError`` naming the file: it may
    describe a cluster another version of eos-chaos started and that still runs."""
    path = record_path(backend)
    try:
        data = read_json_object(path)
    except ConfigError as exc:
        keep_aside(path, str(exc))
        return None
    if data is None:
        return None
    try:
        return _RECORD.validate_python(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: not a cluster record this eos-chaos reads ({_problems(exc)}); another version of "
                          "eos-chaos may have written it, for a cluster that still runs. Stop that cluster with the "
                          f"eos-chaos that started it, or move {path} away (then eos-chaos cluster down --backend "
                          f"{backend} takes down what is left)") from None


_RECORD = TypeAdapter(ClusterRecord)


def _problems(exc: ValidationError) -> str:
    """A record's validation errors in a few words: its unknown fields, its missing ones, the rest."""
    def names(kind: str) -> list[str]:
        return [".".join(map(str, e["loc"])) for e in exc.errors() if e["type"] == kind]

    unknown, missing = names("unexpected_keyword_argument"), names("missing")
    other = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
             if e["type"] not in ("unexpected_keyword_argument", "missing")]
    return "; ".join([*([f"unknown fields: {', '.join(unknown)}"] if unknown else []),
                      *([f"missing fields: {', '.join(missing)}"] if missing else []), *other[:3]])


def keep_aside(path: Path, why: str) -> Path | None:
    """Move the broken state file ``path`` to ``<name>.broken-<time>`` beside it (never deleted: it
    may be what someone needs to find a cluster), saying so in a warning; the new path (None: it
    could not be moved, which the warning says too)."""
    aside = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    try:
        path.rename(aside)
    except OSError as exc:
        log.warning(f"{why}; it is no cluster record, and could not be moved aside ({exc.strerror or exc}): "
                    "it is ignored")
        return None
    log.warning(f"{why}; it is no cluster record: kept aside as {aside}, and ignored")
    return aside


#: Every backend that leaves a record (``clusters.backends.backends.Backend``'s values).
BACKENDS = ("local", "compose", "external")


#: pytest-xdist workers record their clusters in ``<state>/xdist-<worker>/`` (harness/pytest_plugin/__init__.py).
WORKER_PREFIX = "xdist-"


def family() -> list[Path]:
    """Every state folder whose clusters run on this machine beside ours: the main one and each
    xdist worker's. A start reclaiming leftovers must spare a cluster any of them records (a
    worker's ``--eos-keep`` cluster is detached, and claimed only by its worker's record)."""
    here = state_dir()
    root = here.parent if here.name.startswith(WORKER_PREFIX) else here
    return [root, *sorted(root.glob(f"{WORKER_PREFIX}*"))]


def of_family(folder: Path | None) -> bool:
    """``folder`` (as ``procs.same_folder`` spells it) is one of ``family()``'s: the main state folder or an
    xdist worker's beside it, made yet or not; None (a process that does not say) counts as one."""
    if folder is None:
        return True
    root = Path(os.path.realpath(family()[0]))
    return folder == root or (folder.parent == root and folder.name.startswith(WORKER_PREFIX))


def claimed(backend: str) -> set[str]:
    """The cluster ids the state family records for ``backend``."""
    ids: set[str] = set()
    for folder in family():
        try:
            ids.add(str(json.loads((folder / f"{backend}.json").read_text())["cluster_id"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # no record there, or a broken one (its own load keeps it aside, or refuses it)
    return ids


def clear(backend: str, cluster_id: str | None = None) -> None:
    """Remove the record (only if it is still ours when ``cluster_id`` is given)."""
    current = load(backend)
    if current is not None and (cluster_id is None or current.cluster_id == cluster_id):
        record_path(backend).unlink(missing_ok=True)
