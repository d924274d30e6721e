"""What a run does around a user's application under test beyond starting its processes (docs/APPS.md),
the functions ``AppRun`` (harness/phases/app_phases.py) puts in its phases. Before anything starts,
its command and contract function are looked for (``preflight``: a missing one is exit 2). At the
start, its contract is recorded (``app-contract``). After heal and the drain (harness/phases/app_drain.py),
the contract's function is applied to every input the feeder wrote (``expect`` ops: the checker never
runs user code), and the output topics are scanned with their keys (``scan`` ops with ``app``).
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition
from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]  # the package's stubs leave it out

from clusters.kafka.health import admin_client
from harness.base.errors import ConfigError
from harness.base.log_digest import LogDigest, digest_file
from harness.history.model import APP, READ_COMMITTED, READ_UNCOMMITTED, SCAN, tp_key
from harness.history.recorder import HISTORY_DIR, Recorder
from harness.kafka.reads import read_all
from harness.kafka.serde import decode
from harness.phases import user_functions
from harness.phases.kind_run import Processes, ScenarioView
from harness.rundir.runfolder import RunFolder
from harness.workloads import app_args
from harness.workloads.app_wrapper import KILLED_AT_STOP
from harness.workloads.registry import AppSettings, instance_names

log = logging.getLogger(__name__)

#: One question to the cluster (the topics' ends); generous for a loaded machine.
PROBE_TIMEOUT_S = 10.0
#: ListOffsets for the end of a partition
_LATEST = OffsetSpec.latest()  # type: ignore[no-untyped-call]  # the package's stubs leave it untyped


def stages_of(sc: ScenarioView) -> list[AppSettings]:
    """The scenario's apps, validated, in the order written: one app, or a pipeline's stages (the
    first fed by the harness, each later one reading an earlier one's output: docs/APPS.md)."""
    return [AppSettings.model_validate(w.settings) for w in sc.workloads if w.kind == APP]


def settings_of(sc: ScenarioView) -> AppSettings | None:
    """The scenario's first app (the one the feeder feeds), validated."""
    stages = stages_of(sc)
    return stages[0] if stages else None


def outputs(sc: ScenarioView) -> list[str]:
    """Every app's output topics (none without an app)."""
    return [t for s in stages_of(sc) for t in s.outputs]


def instances(sup: Processes) -> list[str]:
    """Every app instance's process name, of every stage."""
    return sup.of_kind(APP)


def stage_instances(sc: ScenarioView) -> dict[str, list[str]]:
    """Each app's instances' process names: ``app-N``, numbered over the app entries in the order
    written (the registry numbers two entries of a kind so: ``Kind.processes``)."""
    return instance_names([(AppSettings.model_validate(w.settings), w.count) for w in sc.workloads if w.kind == APP])


def contract_value(s: AppSettings) -> dict[str, Any]:
    """The ``app-contract`` op's value (topics as the run names them)."""
    # formats other than text only: a contract of text inputs keeps the shape it always had
    formats = {t: f for t in s.inputs if (f := s.feeder.source(t).format) != "text"} if s.fed() else {}
    return s.contract.recorded(s.name, list(s.inputs), list(s.outputs), formats, upstream=s.upstream).value()


def cwd_of(s: AppSettings) -> Path:
    """Where the app's contract function is imported from: its working folder (as the scenario's
    loader made it absolute), or the harness's."""
    return Path(s.cwd) if s.cwd and "{" not in s.cwd else Path.cwd()


# --------------------------------------------------------------------------------------- preflight
def preflight(sc: ScenarioView) -> None:
    """``ConfigError`` (exit 2, nothing started) when an app's command or working folder cannot be
    found, or a function it names fails on sample inputs (``user_functions.preflight``)."""
    for s in stages_of(sc):
        _preflight(sc, s)


def _preflight(sc: ScenarioView, s: AppSettings) -> None:
    place = app_args.Place(bootstrap="127.0.0.1:9092", topics={t: t for t in sc.topics}, inputs=tuple(s.inputs),
                           outputs=tuple(s.outputs), instance=0, instances=1, id=s.id, workdir="/tmp",
                           python=sys.executable)
    cwd = Path(app_args.expand(s.cwd, place)) if s.cwd else Path.cwd()
    if not cwd.is_dir():
        raise ConfigError(f"app setting cwd: {cwd} is not a folder" + (" (relative to the scenario file's folder)"
                                                                        if s.cwd and not Path(s.cwd).is_absolute() else ""))
    if "{" not in s.command[0]:
        prog = s.command[0]
        env_path = s.env.get("PATH", os.environ.get("PATH", ""))
        found = (cwd / prog if not Path(prog).is_absolute() else Path(prog)) if "/" in prog else shutil.which(prog, path=env_path)
        if found is None or not Path(found).is_file() or not os.access(found, os.X_OK):
            where = f"in {cwd}" if "/" in prog else "on PATH"
            raise ConfigError(f"app setting command: {prog!r} is not an executable file {where}; the command's first "
                              "word is the program (use {python} for the harness's own Python)")
    user_functions.preflight(s, cwd)  # each one tried on sample inputs: a wrong name or answer is refused now


# --------------------------------------------------------------------------------------- failures
def failed_logs(run_dir: Path, exits: dict[str, int | None]) -> dict[str, LogDigest]:
    """Per instance whose log shows an exception or an ERROR line, or whose wrapper did not end as
    the stop asked (an app that could not start, exited before it was ready, or kept failing),
    what its log says: the journal keeps it (``AppFacts.logs``), the report shows it."""
    out: dict[str, LogDigest] = {}
    for name, code in exits.items():
        d = digest_file(RunFolder(run_dir).workloads / f"{name}.log")
        if isinstance(d, LogDigest) and (d.failed or code not in (0, KILLED_AT_STOP, None)):
            out[name] = d
    return out


# --------------------------------------------------------------------------------------- the drain
def restart_dead(sup: Processes) -> list[str]:
    """Start again every app instance the run left dead (a kill whose restart the run's end cut off):
    the drain needs the app running. Their names."""
    dead = [n for n in instances(sup) if not sup.alive(n)]
    for name in dead:
        sup.restart(name)
    return dead


def running_again(run_dir: Path, names: list[str]) -> list[str]:
    """Of the app instances ``names``, those not yet ready since their command's last start (its
    history's last ``app-start`` without an ``app-ready`` after it, or none yet)."""
    late = []
    for name in names:
        ready = False
        for path in sorted((run_dir / HISTORY_DIR).glob(f"{name}.*jsonl")):
            with path.open("rb") as f:
                for line in f:
                    if b'"app-start"' in line:
                        ready = False
                    elif b'"app-ready"' in line:
                        ready = True
        if not ready:
            late.append(name)
    return late


# --------------------------------------------------------------------------------------- undeclared topics
def topic_ends(bootstrap: str) -> dict[str, int]:
    """Every topic's records so far (the sum of its partitions' end offsets), Kafka's own ``__``
    topics aside: one ListOffsets round, however many topics a shared cluster holds."""
    admin = admin_client(bootstrap)
    meta = admin.list_topics(timeout=PROBE_TIMEOUT_S)
    tps = [TopicPartition(t, p) for t, tm in meta.topics.items() if not t.startswith("__") for p in tm.partitions]
    if not tps:
        return {}
    ends: dict[str, int] = {}
    for tp, fut in admin.list_offsets({tp: _LATEST for tp in tps}, request_timeout=PROBE_TIMEOUT_S).items():
        try:
            ends[tp.topic] = ends.get(tp.topic, 0) + max(0, fut.result(timeout=PROBE_TIMEOUT_S).offset)
        except Exception:  # noqa: BLE001 - a partition without a leader now: not counted, never a finding
            continue
    return ends


def stray_topics(before: dict[str, int], after: dict[str, int], stages: list[AppSettings],
                 scenario_topics: list[str]) -> dict[str, int]:
    """The topics that gained records during the run that are neither the scenario's nor an app's own
    internal ones (``{id}-...``: a Kafka Streams app's repartition and changelog topics), with how
    many records (offsets, markers included) each gained: what the app (or a pipeline's apps:
    which one cannot be told) wrote undeclared."""
    mine = set(scenario_topics)
    ids = tuple(f"{s.id}-" for s in stages)
    return {t: n - before.get(t, 0) for t, n in sorted(after.items())
            if n > before.get(t, 0) and t not in mine and not t.startswith(ids)}


# --------------------------------------------------------------------------------------- final scans
def final_scans(bootstrap: str, s: AppSettings, partitions: Mapping[str, int], rec: Recorder, stable: bool) -> int:
    """Every output partition from offset 0 to its end, read_committed then read_uncommitted, each
    record ``[offset, value, key]`` decoded by the contract's ``output_serde``. Records read."""
    serde = s.contract.output_serde

    def record(msg: Any) -> tuple[Any, ...]:
        return (int(msg.offset()), decode(serde.value, msg.value()), decode(serde.key, msg.key()))

    n = 0
    for iso in (READ_COMMITTED, READ_UNCOMMITTED):
        value: dict[str, list[list[object]]] = {}
        for topic in s.outputs:
            back = read_all(bootstrap, topic, partitions[topic], iso, stable=stable, record=record)
            for p, recs in back.records.items():
                value[tp_key(topic, p)] = [list(r) for r in recs]
                n += len(recs)
        rec.event("final", SCAN, value, type_="ok", isolation=iso, app=s.name)
    return n
