"""zombie: two instances of one ``transactional.id``. Role ``first`` opens a transaction, writes
half of it, announces ``zombie-ready`` and waits (the runner SIGSTOPs it meanwhile); role
``second`` runs ``init_transactions`` (fencing the first) and commits one transaction of its own.
Resumed, the first writes the rest and tries to commit: Kafka must fence it. Every call's result
is recorded.

Settings: ``registry.ZombieSettings`` (``role`` set by the runner).
"""

from __future__ import annotations

import time
from pathlib import Path

from harness.history.recorder import Recorder
from harness.workloads.common import Retired, StopFlag, Txn, WorkloadConfig, drop, init, new_producer, transaction
from harness.workloads.registry import ZombieSettings

READY, GO = "zombie-ready", "zombie-go"
#: The runner freezes the first instance, starts and finishes the second, then resumes the first:
#: seconds normally; generous for a loaded machine.
GO_TIMEOUT_S = 300.0


def main() -> None:
    cfg = WorkloadConfig.from_argv()
    StopFlag(cfg.max_seconds)
    s = ZombieSettings.model_validate(cfg.settings)
    role, txn_id = s.role, s.txn_id
    run_dir = Path(cfg.run_dir)
    with Recorder(run_dir, cfg.name) as rec:
        process = rec.process(cfg.name)
        sends = [(cfg.topics[k % len(cfg.topics)], k % cfg.partitions_of(cfg.topics[k % len(cfg.topics)]), f"{process}-0-{k}") for k in range(6)]
        producer = new_producer(cfg, txn_id)
        try:
            init(rec, process, producer, txn_id)

            def announce_and_wait() -> None:
                (run_dir / READY).write_text(str(time.time()))
                deadline = time.monotonic() + GO_TIMEOUT_S
                while not (run_dir / GO).exists():
                    if time.monotonic() > deadline:
                        raise SystemExit(f"zombie: no {GO} within {GO_TIMEOUT_S:.0f}s")
                    time.sleep(0.05)  # polling a file the runner creates; not synchronising with Kafka

            pause = (3, announce_and_wait) if role == "first" else None
            transaction(rec, process, producer, Txn(txn_id, sends, pause=pause))
        except Retired:
            pass  # recorded: fenced (expected for the first) or failed
        finally:
            drop(producer)


if __name__ == "__main__":
    main()
