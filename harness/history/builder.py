"""A history built op by op in memory, as the workloads would record it: for tests, and for
``eos-chaos selftest``'s generated histories. ``tables()`` flattens it as the loader would."""

from __future__ import annotations

from typing import Any

from harness.history.model import (
    APP_CONTRACT,
    APP_STRAY,
    EXPECT,
    FAULT,
    FAULT_START,
    GROUP_OFFSETS,
    INFO,
    INIT,
    INVOKE,
    NEMESIS,
    OK,
    POLL,
    READ_COMMITTED,
    SCAN,
    TXN,
    Op,
)
from harness.history.store import Tables, flatten

#: records by "topic-partition": [(offset, value), ...]
Recs = dict[str, list[tuple[int, str]]]
#: an app's output records by "topic-partition": [(offset, value, key), ...]
AppRecs = dict[str, list[tuple[int, str | None, str | None]]]
#: what an app's feeder wrote for one send: (payload as recorded, timestamp ms, its headers or None)
Payload = tuple[str | None, int, list[tuple[str, str]] | None]
#: an output record a contract's function gives: (topic, key, value); a by-function's
#: contribution: (topic, key, amount)
Output = tuple[str, str | None, str | int | None]


class History:
    """Appends ops with increasing times; ``tables()`` flattens them as the loader would."""

    def __init__(self) -> None:
        self.ops: list[dict[str, Any]] = []
        self.t = 0

    def _add(self, **op: Any) -> None:
        self.t += 1000
        self.ops.append({"time": self.t, **op})

    def init(self, process: str, txn_id: str, outcome: str = OK) -> None:
        self._add(process=process, type=INVOKE, f=INIT, value=txn_id)
        self._add(process=process, type=outcome, f=INIT, value=txn_id)

    def at(self, t: int) -> History:
        """The next op at time ``t`` (ns), and the ones after it on from there."""
        self.t = t - 1000
        return self

    def txn(self, process: str, sends: list[tuple[str, int, str, int | None]], outcome: str = OK,
            txn_id: str | None = None, keys: list[str | None] | None = None, error: str | None = None,
            took: int = 0, records: list[Payload] | None = None) -> None:
        """``sends``: (topic, partition, value, offset Kafka returned or None); ``keys``: one per send;
        ``error``: a failed or unknown one's (a timeout unless said); ``took``: ns more between its
        invoke and its completion; ``records``: an app feeder's, one per send (the value is its id)."""
        self.begin(process, sends, txn_id, keys, records)
        self.t += took
        self.end(process, sends, outcome, txn_id, error)

    def begin(self, process: str, sends: list[tuple[str, int, str, int | None]], txn_id: str | None = None,
              keys: list[str | None] | None = None, records: list[Payload] | None = None) -> None:
        """A transaction's invoke alone (``end`` completes it): ops of other processes may come between."""
        self._add(process=process, type=INVOKE, f=TXN, value=[["send", t, p, v] for t, p, v, _ in sends], txn_id=txn_id,
                  **({"keys": keys} if keys is not None else {}),
                  **({"records": [[p, ts, None if h is None else [list(x) for x in h]] for p, ts, h in records]}
                     if records is not None else {}))

    def end(self, process: str, sends: list[tuple[str, int, str, int | None]], outcome: str = OK,
            txn_id: str | None = None, error: str | None = None) -> None:
        """The completion of ``process``'s transaction ``begin`` invoked (the same ``sends``); its
        commit was called 500 ns before it; ``error``: a failed or unknown one's (a timeout unless said)."""
        commit_at = self.t + 500
        done = [["send", t, p, v, o] if outcome == OK else ["send", t, p, v] for t, p, v, o in sends]
        self._add(process=process, type=outcome, f=TXN, value=done, commit_at=commit_at, txn_id=txn_id,
                  **({"error": error or "KafkaError{code=_TIMED_OUT}"} if outcome != OK else {}))

    def poll(self, process: str, recs: Recs) -> None:
        self._add(process=process, type=INVOKE, f=POLL, value=None)
        self._add(process=process, type=OK, f=POLL, value={k: [list(r) for r in v] for k, v in recs.items()})

    def scan(self, recs: Recs, isolation: str = READ_COMMITTED) -> None:
        self._add(process="final", type=OK, f=SCAN, value={k: [list(r) for r in v] for k, v in recs.items()},
                  isolation=isolation)

    def app_contract(self, app: str, contract: str, inputs: list[str], outputs: list[str], **fields: Any) -> None:
        """The runner's ``app-contract`` event (``fields``: function, order, aggregates)."""
        self._add(process="runner", type=OK, f=APP_CONTRACT,
                  value={"app": app, "contract": contract, "inputs": inputs, "outputs": outputs, **fields})

    def expect(self, app: str, inputs: list[tuple[str, list[Output]]]) -> None:
        """The runner's ``expect`` event: per input value, the outputs the contract's function gives."""
        self._add(process="runner", type=OK, f=EXPECT,
                  value={"app": app, "inputs": [[v, [list(o) for o in outs]] for v, outs in inputs]})

    def expect_table(self, app: str, table: list[Output], inputs: int) -> None:
        """The runner's ``expect`` event of a model: the final table it expects, from ``inputs`` committed inputs."""
        self._add(process="runner", type=OK, f=EXPECT, value={"app": app, "table": [list(r) for r in table], "inputs": inputs})

    def expect_join(self, app: str, alternatives: list[tuple[str, str | None, list[Output]]]) -> None:
        """The runner's ``expect`` event of a join: per stream input and table write (None: no table
        value), the outputs the function gives."""
        self._add(process="runner", type=OK, f=EXPECT,
                  value={"app": app, "join": [[s, v, [list(o) for o in outs]] for s, v, outs in alternatives]})

    def app_stray(self, app: str, topics: dict[str, int]) -> None:
        """The runner's ``app-stray`` event: topics the app wrote to without declaring them."""
        self._add(process="runner", type=OK, f=APP_STRAY, value={"app": app, "topics": topics})

    def app_poll(self, process: str, app: str, recs: AppRecs) -> None:
        self._add(process=process, type=INVOKE, f=POLL, value=None)
        self._add(process=process, type=OK, f=POLL, value={k: [list(r) for r in v] for k, v in recs.items()}, app=app)

    def app_scan(self, app: str, recs: AppRecs, isolation: str = READ_COMMITTED) -> None:
        self._add(process="final", type=OK, f=SCAN, value={k: [list(r) for r in v] for k, v in recs.items()},
                  isolation=isolation, app=app)

    def fault(self, kind: str, phase: str, **detail: Any) -> None:
        """The nemesis's event of a fault's start or stop (``detail``: workload, node, links, ...)."""
        self._add(process=NEMESIS, type=INFO if phase == FAULT_START else OK, f=FAULT,
                  value={"kind": kind, "phase": phase, **detail})

    def event(self, process: str, f: str, value: dict[str, Any], type_: str = INFO) -> None:
        """A one-line event (no invoke): a Spark job's ``spark-start`` or ``spark-batch``, an app's ``app-ready``."""
        self._add(process=process, type=type_, f=f, value=value)

    def lso(self, lags: dict[str, float | None], bound: float = 90.0, stalled_at: dict[str, int] | None = None) -> None:
        self._add(process="final", type=OK, f="lso", value={"bound_s": bound, "lag_s": lags, "stalled_at": stalled_at or {}})

    def group_offsets(self, offsets: dict[str, int]) -> None:
        self._add(process="final", type=OK, f=GROUP_OFFSETS, value=offsets)

    def tables(self) -> Tables:
        ordered = sorted(self.ops, key=lambda o: o["time"])
        return flatten([Op.from_json(o, index=i) for i, o in enumerate(ordered)])
