"""copier: consume-transform-produce. Reads the input topic read_committed in a consumer group
(subscribe mode), writes one output record per input record to the same partition of the output
topic (the value names its input and the attempt: ``copy/<topic>/<partition>/<offset>/<attempt>/<value>``),
and commits the
consumed offsets in the same transaction (``send_offsets_to_transaction`` with the consumer group
metadata, so a copier that lost its partitions is fenced by generation, KIP-447). A share of
transactions is aborted on purpose, after which the copier rewinds to the committed offsets.

Settings: ``registry.CopierSettings``.
"""

from __future__ import annotations

import random
from functools import partial
from pathlib import Path
from typing import Any

from harness.history.model import FAIL, copy_value, tp_key
from harness.history.recorder import Recorder
from harness.workloads.client import CALL_TIMEOUT_S, Client, ClientError, GroupReader
from harness.workloads.common import Retired, StopFlag, Txn, WorkloadConfig, drop, init, new_group_reader, new_producer, transaction
from harness.workloads.registry import COPIER_GROUP, CopierSettings

POLL_TIMEOUT_S = 1.0
GROUP = COPIER_GROUP


def main() -> None:
    cfg = WorkloadConfig.from_argv()
    rnd = random.Random(f"{cfg.seed}/{cfg.name}")
    stop = StopFlag(cfg.max_seconds)
    s = CopierSettings.model_validate(cfg.settings)
    txn_id = f"eos-{cfg.name}"
    incarnation = 0
    with Recorder(Path(cfg.run_dir), cfg.name) as rec:
        while not stop:
            process = rec.process(cfg.name, incarnation)
            incarnation += 1
            consumer = new_group_reader(cfg, s.group, [s.input])
            producer = new_producer(cfg, txn_id)
            try:
                init(rec, process, producer, txn_id)
                seq = 0
                while not stop:
                    records = consumer.poll(s.batch, POLL_TIMEOUT_S)
                    if not records:
                        continue
                    attempt = f"{process}-{seq}"
                    seq += 1
                    sends = [(s.output, p, copy_value(t, p, o, v, attempt)) for t, p, o, v in records]
                    outcome = transaction(rec, process, producer, Txn(txn_id, sends, abort=rnd.random() < s.abort_share,
                                                                      before_commit=partial(send_offsets, consumer, producer)))
                    if outcome == FAIL:
                        consumer.rewind(CALL_TIMEOUT_S)
            except (Retired, ClientError):
                continue
            finally:
                drop(producer)
                consumer.close()


def send_offsets(consumer: GroupReader, producer: Client) -> dict[str, Any]:
    """Commit ``consumer``'s positions with the open transaction; the fields its completion records."""
    pos = consumer.positions()
    producer.send_offsets(pos, consumer.group_metadata(), CALL_TIMEOUT_S)
    return {"offsets": {tp_key(t, p): o for (t, p), o in pos.items() if o >= 0}}


if __name__ == "__main__":
    main()
