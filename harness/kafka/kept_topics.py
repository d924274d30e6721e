"""A run's kept-name topics (a scenario's ``keep_name: true``: the name as the app under test writes
it, with no run tag): made fresh for the run, refused when they hold someone else's records, and
deleted when the run ends.

A kept name is the same on every run, so a topic of that name may already be on a cluster the run
did not start (a test session's, one left up by ``cluster up`` or ``run --keep``). The run replaces
it only when an eos-chaos run wrote it, which is known thus:

- the topic holds no record (every partition's earliest offset is its latest): nothing to lose; or
- the cluster's folder records it as created by a run (``kept-topics/<name>.json``: the topic's id,
  the run's process and folder, written when the run created it and removed when the run deleted
  it), and the topic's id is the one recorded: a topic deleted and made again by someone else since
  has another id.

Anything else is refused (``ConfigError``, exit 2, naming the topic and what it holds) before the
run creates or writes anything. The feeder's ``eos-chaos-id`` header does not decide: an app's
output topic holds the app's records, which never carry it, and proving a large topic foreign would
mean reading all of it. A topic recorded for a run whose process still runs is another run's, in
use: refused too, never deleted under it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]  # not in its __all__

from clusters.backends.procs import ProcessId, this_process
from harness.base.errors import ClusterError, ConfigError
from harness.base.wait import wait_until
from harness.rundir.runfolder import write_json

log = logging.getLogger(__name__)

#: The folder, in the cluster's own folder, that records the kept-name topics runs created on it.
KEPT_DIR = "kept-topics"
#: A topic's deletion is one metadata record in KRaft: under a second on a healthy cluster; this
#: leaves a loaded machine's brokers time to learn of it before the topic is made again.
DELETE_TIMEOUT_S = 60.0
#: Every broker learns of a topic made (or deleted) from the metadata log within a second on a
#: healthy cluster; a loaded machine's may take seconds.
LEARN_TIMEOUT_S = 60.0
#: One question to the cluster (a topic's id, its offsets): one round trip, generous for a loaded machine.
ASK_TIMEOUT_S = 30.0
_EARLIEST = OffsetSpec.earliest()  # type: ignore[no-untyped-call]  # the package's stubs leave it untyped
_LATEST = OffsetSpec.latest()  # type: ignore[no-untyped-call]


@dataclass(frozen=True)
class LeftOver:
    """A kept-name topic already on the cluster: its id, and its records per partition."""

    name: str
    topic_id: str
    records: dict[int, int]

    @property
    def empty(self) -> bool:
        return not any(self.records.values())

    def holds(self) -> str:
        """What it holds, in words."""
        held = {p: n for p, n in sorted(self.records.items()) if n}
        if not held:
            return f"no record (topic id {self.topic_id})"
        return (f"{sum(held.values())} records (offsets, transaction markers included) in partition"
                f"{'s' if len(held) > 1 else ''} {', '.join(map(str, held))} (topic id {self.topic_id})")


class KeptTopics:
    """A run's kept-name topics on one cluster, whose folder (``marks``'s parent) records which of
    its topics runs created."""

    def __init__(self, admin: AdminClient, names: list[str], cluster_dir: Path) -> None:
        self.admin = admin
        self.names = list(names)
        self.marks = cluster_dir / KEPT_DIR
        self.created: list[str] = []
        self.deleted_ids: dict[str, str] = {}  # name -> the id of the leftover deleted before it was made again

    def _mark(self, name: str) -> Path:
        return self.marks / f"{name}.json"

    def _recorded(self, name: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self._mark(name).read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def claim(self) -> list[str]:
        """Each kept-name topic made ready to be created fresh: every one found checked first (a
        foreign one, or one in use by a run still running, is ``ConfigError`` before anything is
        deleted), then the leftovers deleted (each logged) and waited for. Returns what was
        replaced, in words."""
        found = [f for name in self.names if (f := self._found(name)) is not None]
        for f in found:
            problem = self._refusal(f)
            if problem:
                raise ConfigError(problem)
        for f in found:
            self._delete(f.name, f"left over ({f.holds()})")
            self.deleted_ids[f.name] = f.topic_id
        return [f"{f.name}: {f.holds()}" for f in found]

    def _refusal(self, f: LeftOver) -> str | None:
        """Why ``f`` may not be replaced (None: it may)."""
        mark = self._recorded(f.name)
        owner = ProcessId.parse(str(mark.get("pid", ""))) if mark else None
        if mark and owner is not None and owner.alive and owner.pid != os.getpid():
            return (f"kept-name topic {f.name} is in use by another run on this cluster (process {owner.pid}, run "
                    f"folder {mark.get('run_dir')}); a kept name is one topic, so two runs cannot share it at once")
        if f.empty or (mark is not None and mark.get("topic_id") == f.topic_id):
            return None
        return (f"kept-name topic {f.name} already holds {f.holds()} that no eos-chaos run on this cluster wrote "
                f"(the cluster's folder {self.marks.parent} records no run that created this topic, by its id); "
                f"refused before anything was "
                f"written. Delete the topic if the run may replace it, or run on a cluster of the run's own")

    def _found(self, name: str) -> LeftOver | None:
        """``name`` on the cluster now (None: it is not)."""
        try:
            desc = self.admin.describe_topics(TopicCollection([name]))[name].result(timeout=ASK_TIMEOUT_S)
            tps = [TopicPartition(name, p.id) for p in desc.partitions]
            first = self._offsets(tps, _EARLIEST)
            last = self._offsets(tps, _LATEST)
        except KafkaException as exc:
            if _unknown_topic(exc):
                return None
            raise ClusterError(f"kept-name topic {name}: could not learn whether it is on the cluster and what it "
                               f"holds: {exc}") from exc
        return LeftOver(name, str(desc.topic_id), {p: last[p] - first.get(p, 0) for p in last})

    def _offsets(self, tps: list[TopicPartition], spec: Any) -> dict[int, int]:
        futures = self.admin.list_offsets({tp: spec for tp in tps}, request_timeout=ASK_TIMEOUT_S)
        return {tp.partition: max(0, fut.result(timeout=ASK_TIMEOUT_S).offset) for tp, fut in futures.items()}

    def _delete(self, name: str, why: str) -> None:
        """Delete ``name`` and wait until the cluster lists it no more; ``WaitTimeout`` naming it and
        what was last seen."""
        log.info(f"deleting kept-name topic {name}: {why}")
        try:
            self.admin.delete_topics([name], operation_timeout=ASK_TIMEOUT_S)[name].result(timeout=ASK_TIMEOUT_S)
        except KafkaException as exc:
            if not _unknown_topic(exc):
                raise ClusterError(f"kept-name topic {name} could not be deleted ({why}): {exc}") from exc
        seen: list[str] = []

        def gone() -> bool:
            t = self.admin.list_topics(topic=name, timeout=5).topics.get(name)
            seen[:] = [f"listed, error {t.error}, {len(t.partitions)} partitions" if t is not None else "not listed"]
            return t is None or (t.error is not None and t.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART)

        wait_until(gone, timeout=DELETE_TIMEOUT_S, what=f"kept-name topic {name} to be deleted",
                   state=lambda: f"topic {name}: {seen[0] if seen else 'no answer'}")
        self._mark(name).unlink(missing_ok=True)

    def created_one(self, name: str, run_dir: Path) -> None:
        """``name`` was created by this run: recorded in the cluster's folder (with its id, this
        process and the run's folder), so a later run may replace it even if this one is killed."""
        seen: list[str] = []

        def new_id() -> str | None:
            # the broker asked may not know the topic yet, or still know the leftover it replaced
            seen[:] = [str(self.admin.describe_topics(TopicCollection([name]))[name].result(timeout=ASK_TIMEOUT_S).topic_id)]
            return seen[0] if seen[0] != self.deleted_ids.get(name) else None

        topic_id = wait_until(new_id, timeout=LEARN_TIMEOUT_S, what=f"kept-name topic {name}'s id as created (the "
                              "brokers to learn of it)", state=lambda: f"id {seen[0] if seen else 'unknown'}, the "
                              f"leftover's {self.deleted_ids.get(name)}")
        self.marks.mkdir(parents=True, exist_ok=True)
        write_json(self._mark(name), {"topic": name, "topic_id": topic_id, "pid": str(this_process()),
                                      "run_dir": str(run_dir)})
        self.created.append(name)

    def delete_created(self) -> list[str]:
        """The topics this run created, deleted (its end: they hold no tag, so the next run of the same
        name would find them). What could not be, in words; never raises."""
        problems = []
        for name in self.created:
            try:
                self._delete(name, "the run that created it ended")
            except Exception as exc:  # noqa: BLE001 - left with its record: the next run replaces it
                problems.append(f"{name}: {type(exc).__name__}: {exc}")
        self.created.clear()
        return problems


def _unknown_topic(exc: KafkaException) -> bool:
    """The topic asked about is not there (an answer, not a failure)."""
    err = exc.args[0] if exc.args else None
    return isinstance(err, KafkaError) and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


@contextmanager
def kept(admin: AdminClient, names: list[str], cluster_dir: Path) -> Iterator[KeptTopics]:
    """The run's kept-name topics, claimed (``KeptTopics.claim``), and those it created deleted when
    the block ends, whatever happens."""
    topics = KeptTopics(admin, names, cluster_dir)
    if names:
        topics.claim()
    try:
        yield topics
    finally:
        problems = topics.delete_created()
        if problems:
            log.info(f"kept-name topics not deleted at the run's end (the next run replaces them): {problems}")
