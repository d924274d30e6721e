"""txn-producer: transactions of values unique in the run, over several partitions of two topics,
a share aborted on purpose. A fenced or stuck producer retires; the next incarnation gets a new
process id (``<name>.<n>``) and the same ``transactional.id``, whose ``init_transactions`` fences
the old one.

With ``producers: N`` the process runs N such producers side by side, one thread each: producer
``k`` has a ``transactional.id`` of its own (``transactional_id(name, k)``, on the first one's
coordinator) and its own random draws, and each of its incarnations a process id of its own from
the one numbering of the process (``Recorder.new_process``). To the checker each is a producer
like any other: one open transaction at a time, the sole writer of its transactional.id.

Settings: ``registry.TxnProducerSettings``.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from math import floor
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException, Producer

from harness.history.model import OK, SEND
from harness.history.recorder import Recorder
from harness.kafka.placement import partition_of_bytes
from harness.kafka.serde import encode
from harness.workloads.client import CALL_TIMEOUT_S, Client, ErrorFacts
from harness.workloads.clients.confluent import error_facts, facts_of
from harness.workloads.common import Retired, StopFlag, Txn, WorkloadConfig, drop, init, new_producer, side_by_side, transaction
from harness.workloads.feed import INTEGER_STRIDE, Feeder, FeedError, Feeding
from harness.workloads.outcome import Phase, classify
from harness.workloads.registry import MAX_VALUES_PER_TXN, TxnProducerSettings
from harness.workloads.txn_ids import transactional_id


def pick_sends(cfg: WorkloadConfig, s: TxnProducerSettings, rnd: random.Random, prefix: str,
               n: int, values: list[str] | None = None) -> list[tuple[str, int, str]]:
    """``n`` sends of unique values (``prefix-k``, or ``values``) to random partitions of the
    workload's topics."""
    topics = s.topics or cfg.topics
    width = s.value_bytes
    # choices(k=n) draws all at once: per-value calls into random are a visible cost at 100k values/s.
    # Each partition is drawn as choices(range(partitions)) draws it (floor(random() * n)), with its
    # topic's own partitions: the same draws as before topics had their own.
    chosen, draw = rnd.choices(topics, k=n), rnd.random
    return list(zip(chosen, [floor(draw() * cfg.partitions_of(t)) for t in chosen],
                    [v.ljust(width, ".") for v in values] if values is not None
                    else [f"{prefix}-{k}".ljust(width, ".") for k in range(n)]))


#: How long an app's feeder whose records files are used up waits between looks at the stop flag.
IDLE_S = 0.5


def keyed_sends(cfg: WorkloadConfig, s: TxnProducerSettings, rnd: random.Random, values: list[str]) -> tuple[
        list[tuple[str, int, str]], list[str]]:
    """Sends of ``values`` each with a seeded key of ``s.keys``, to the partition the key hashes to
    (murmur2, as Kafka's Java clients partition), on random topics of the workload's; and the keys."""
    topics = s.topics or cfg.topics
    keys = [f"k{i}" for i in rnd.choices(range(s.keys), k=len(values))]
    return [(t, partition_of(k, cfg.partitions_of(t)), v) for t, k, v in zip(rnd.choices(topics, k=len(values)), keys, values)], keys


def partition_of(key: str, partitions: int) -> int:
    """The partition Kafka's default partitioner gives ``key`` (its Java clients: murmur2, positive)."""
    return partition_of_bytes(key.encode(), partitions)


def producer_random(cfg: WorkloadConfig, k: int) -> random.Random:
    """Producer ``k``'s draws: seeded by the run's seed, the instance and ``k`` (the first's as a
    process of one producer always drew)."""
    return random.Random(f"{cfg.seed}/{cfg.name}" + (f"/{k}" if k else ""))


def incarnation_of(process: str) -> int:
    """``n`` of a process name ``<name>.<n>``."""
    return int(process.rpartition(".")[2])


def idle(stop: StopFlag, seconds: float) -> None:
    """No transaction for ``seconds`` (an idle application), ending early on stop."""
    until = time.monotonic() + seconds
    while not stop and time.monotonic() < until:
        time.sleep(0.2)  # idling is the workload's behaviour here, not a wait on anything


#: Opens a transactional producer: (the workload's config, the transactional.id).
OpenClient = Callable[[WorkloadConfig, str], Client]


def run_transactional(cfg: WorkloadConfig, s: TxnProducerSettings, rec: Recorder, stop: StopFlag,
                      open_client: OpenClient = new_producer) -> None:
    """``s.producers`` transactional producers side by side until ``stop``."""
    side_by_side(s.producers, lambda k: _transactional(cfg, s, rec, stop, k, open_client), stop, "producer")


def _transactional(cfg: WorkloadConfig, s: TxnProducerSettings, rec: Recorder, stop: StopFlag, k: int,
                   open_client: OpenClient) -> None:
    """Producer ``k``: one incarnation after another until ``stop``."""
    txn_id = transactional_id(cfg.name, k)
    rnd = producer_random(cfg, k)
    rate = s.rate / s.producers  # the setting is the whole process's
    per_txn = s.values_per_txn
    written, started = 0, time.monotonic()
    while not stop:
        process = rec.new_process(cfg.name)
        producer = open_client(cfg, txn_id)
        number = incarnation_of(process) * INTEGER_STRIDE  # the integers' base (integer_values)
        try:
            init(rec, process, producer, txn_id)
            seq = 0
            while not stop:
                keys: list[str] | None = None
                if s.integer_values:
                    if number % INTEGER_STRIDE + per_txn >= INTEGER_STRIDE:
                        raise Retired("integer values of this incarnation used up")  # the next has its own
                    values = [str(number + k + 1) for k in range(per_txn)]
                    number += per_txn
                else:
                    values = [f"{process}-{seq}-{k}" for k in range(per_txn)]
                if s.keys:
                    sends, keys = keyed_sends(cfg, s, rnd, values)
                else:
                    sends = pick_sends(cfg, s, rnd, f"{process}-{seq}", per_txn, values)
                seq += 1
                t0 = time.monotonic()
                transaction(rec, process, producer, Txn(
                    txn_id, sends, abort=rnd.random() < s.abort_share,
                    hold_s=s.hold_ms / 1000, gap_s=s.send_gap_ms / 1000, commit_timeout_s=s.commit_timeout_s,
                    abort_after_commit_timeout=s.abort_after_commit_timeout, sole_writer=True,
                    recreate_on_indefinite=s.recreate_on_indefinite,
                    keys=None if keys is None else {i: k.encode() for i, k in enumerate(keys)},
                    invoke_extra=None if keys is None else {"keys": keys},
                    encode=None if s.value_serde == "string" else lambda v: encode(s.value_serde, v)))
                if s.idle_every and seq % s.idle_every == 0:
                    idle(stop, s.idle_ms / 1000)
                written += len(sends)
                if rate:  # hold the pace: the next transaction starts when the rate allows it
                    idle(stop, started + written / rate - time.monotonic())
                if s.txn_ms:
                    took_ms = max(1.0, (time.monotonic() - t0) * 1000)
                    # at most halve or double per step: one slow commit must not collapse the size
                    scaled = int(per_txn * min(2.0, max(0.5, s.txn_ms / took_ms)))
                    per_txn = max(1, min(MAX_VALUES_PER_TXN, scaled))
        except Retired:
            continue
        finally:
            drop(producer)


def run_fed(cfg: WorkloadConfig, s: TxnProducerSettings, rec: Recorder, stop: StopFlag,
            open_client: OpenClient = new_producer) -> None:
    """An app's feeder (``s.feed``): transactions of one input topic each, of the records its
    ``Feeder`` makes, each with its id header; the ``txn`` op records keys and ``records``. Until
    ``stop``, or until every input's records file is used up (then idle)."""
    assert s.feed is not None
    txn_id = transactional_id(cfg.name)
    rnd = producer_random(cfg, 0)
    names = {run: name for name, run in cfg.topic_names.items()}
    feeder = Feeder(s.feed, names, cfg.seed, rnd, Feeding(s.keys, s.integer_values, s.value_serde == "long",
                                                          cfg.partitions_of), s.rate)
    while not stop:
        process = rec.new_process(cfg.name)
        producer = open_client(cfg, txn_id)
        try:
            init(rec, process, producer, txn_id)
            seq = 0
            while not stop:
                wait = feeder.due_in()
                if wait is None or wait > 0:
                    idle(stop, IDLE_S if wait is None else wait)
                    continue
                out = feeder.batch(process, seq, s.values_per_txn, incarnation_of(process))
                seq += 1
                transaction(rec, process, producer, Txn(
                    txn_id, [(o.topic, o.partition, o.id) for o in out], abort=rnd.random() < s.abort_share,
                    sole_writer=True, commit_timeout_s=s.commit_timeout_s,
                    wire=[(o.key, o.value, o.wire_headers(), o.timestamp) for o in out],
                    invoke_extra={"keys": [o.key_text for o in out], "records": [o.record() for o in out]}))
        except Retired:
            continue
        finally:
            drop(producer)


def run_plain(cfg: WorkloadConfig, s: TxnProducerSettings, rec: Recorder, stop: StopFlag) -> None:
    """Non-transactional sends: each value its own op, ok with the offset Kafka returned; ``s.producers``
    producers side by side."""
    side_by_side(s.producers, lambda k: _plain(cfg, s, rec, stop, producer_random(cfg, k)), stop, "producer")


def _plain(cfg: WorkloadConfig, s: TxnProducerSettings, rec: Recorder, stop: StopFlag, rnd: random.Random) -> None:
    from clusters.kafka.health import QUIET

    process = rec.new_process(cfg.name)
    p = Producer({"bootstrap.servers": cfg.bootstrap, "linger.ms": 5, "logger": QUIET, **cfg.client})
    seq = 0
    while not stop:
        topic, part, value = pick_sends(cfg, s, rnd, f"{process}-{seq}", 1)[0]
        seq += 1
        rec.invoke(process, SEND, [topic, part, value])
        result: dict[str, object] = {}

        def delivered(err, msg, result: dict[str, object] = result) -> None:  # type: ignore[no-untyped-def]
            result["err"], result["offset"] = err, (msg.offset() if err is None else None)

        try:
            p.produce(topic, value=value.encode(), partition=part, on_delivery=delivered)
            p.flush(CALL_TIMEOUT_S)
        except (KafkaException, BufferError) as exc:
            facts = error_facts(exc)
            rec.complete(process, classify(Phase.PLAIN_SEND, facts).type, SEND, None, error=facts.describe())
            continue
        err = result.get("err")
        if "err" not in result:
            late = ErrorFacts("_TIMED_OUT", "no delivery report in time", timed_out=True)
            rec.complete(process, classify(Phase.PLAIN_SEND, late).type, SEND, None, error=late.message)
        elif err is None:
            rec.complete(process, OK, SEND, [topic, part, value, result["offset"]])
        else:
            facts = facts_of(err) if isinstance(err, KafkaError) else ErrorFacts(type(err).__name__, str(err))
            rec.complete(process, classify(Phase.PLAIN_SEND, facts).type, SEND, None, error=str(err))
    p.flush(CALL_TIMEOUT_S)


def main() -> None:
    cfg = WorkloadConfig.from_argv()
    stop = StopFlag(cfg.max_seconds)
    s = TxnProducerSettings.model_validate(cfg.settings)
    with Recorder(Path(cfg.run_dir), cfg.name) as rec:
        if s.feed is not None:
            try:
                run_fed(cfg, s, rec, stop)
            except FeedError as exc:  # the user's generator or records: said in the feeder's log, never a traceback
                print(f"{cfg.name}: {exc}", file=sys.stderr, flush=True)
                raise SystemExit(2) from None
        elif s.transactional:
            run_transactional(cfg, s, rec, stop)
        else:
            run_plain(cfg, s, rec, stop)


if __name__ == "__main__":
    main()
