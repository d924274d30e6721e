"""What a workload needs of a Kafka client library: the transactional producer calls (``Client``),
and the facts of a failed call as plain data (``ErrorFacts``), so the outcome rules
(``harness.workloads.outcome``) and the recorded transaction (``common.transaction``) know nothing
of confluent-kafka. A second client (Java is next) is a new implementation of ``Client`` under
``harness/workloads/clients/``, not a fork of the workloads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

#: The producer's transaction.timeout.ms: larger than the outages our scenarios inject, so
#: transactions survive them rather than expire (the incident scenario that wants expiry sets its
#: own, smaller, value), and smaller than the runner's LSO bound (scenario.LSO_BOUND_S), so a
#: transaction a killed producer left open is aborted by the coordinator before the final reads.
TRANSACTION_TIMEOUT_MS = 60_000
#: Per transactional call; generous because brokers may be down or slow. A commit normally takes
#: tens of ms; leader/coordinator moves after a broker kill take ~10-20 s
#: (broker.session.timeout.ms 9 s + election). Past this, the outcome of a commit is "unknown".
CALL_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ErrorFacts:
    """What a client says about a failed call, in the words Kafka's protocol gives every client."""

    name: str                 # the error code's name, e.g. "_TIMED_OUT", "NOT_LEADER_OR_FOLLOWER"
    message: str
    retriable: bool = False   # the same call may succeed if tried again
    fatal: bool = False       # the producer instance is unusable (librdkafka: fatal error)
    txn_requires_abort: bool = False  # the transaction can only be aborted now
    fenced: bool = False      # a newer instance of this transactional.id exists
    timed_out: bool = False   # the call gave up waiting (its request may still go on)

    def describe(self) -> str:
        """The error as the history records it: ``NAME: message``."""
        return f"{self.name}: {self.message}"


class ClientError(Exception):
    """A client call failed; ``facts`` say how."""

    def __init__(self, facts: ErrorFacts) -> None:
        super().__init__(facts.describe())
        self.facts = facts


#: Called for each record the broker acknowledged: (the value sent, the offset it got).
OnOffset = Callable[[bytes, int], None]
#: One record a reader got: (topic, partition, offset, value).
Record = tuple[str, int, int, str]


class Client(Protocol):
    """One transactional producer instance (one ``transactional.id`` epoch). Every call raises
    ``ClientError`` when the client reports a failure; anything else is a bug and propagates."""

    def init(self, timeout_s: float) -> None:
        """``init_transactions``: fences older instances of the ``transactional.id``."""

    def begin(self) -> None:
        """Start a transaction."""

    def send(self, topic: str, partition: int, value: bytes, key: bytes | None, on_offset: OnOffset) -> None:
        """Queue one record of the open transaction (blocks while the local queue is full)."""

    def flush(self, timeout_s: float) -> None:
        """Wait until every queued record is acknowledged, serving ``on_offset`` callbacks."""

    def send_offsets(self, offsets: dict[tuple[str, int], int], group_metadata: object, timeout_s: float) -> None:
        """Commit a consumer group's positions ``{(topic, partition): next offset}`` with the open
        transaction; ``group_metadata`` is the consumer's (same client library) generation info."""

    def commit(self, timeout_s: float) -> None:
        """``commit_transaction``; a timed-out commit goes on in the background, and calling it
        again resumes it."""

    def abort(self, timeout_s: float) -> None:
        """``abort_transaction``."""

    def close(self) -> None:
        """Let go of the producer without waiting; never raises (a fenced producer is dropped too)."""


#: One record as the app's feeder sends it: (key, value, headers, timestamp ms); its headers hold
#: its id (``model.FEEDER_ID_HEADER``), which ``on_offset`` gets in place of the value.
WireRecord = tuple[bytes | None, bytes | None, list[tuple[str, str | bytes | None]], int]


@runtime_checkable
class HeadersClient(Protocol):
    """A ``Client`` that also sends records with headers and a timestamp (the app's feeder's)."""

    def send_record(self, topic: str, partition: int, record: WireRecord, on_offset: OnOffset) -> None:
        """Queue one record of the open transaction; ``on_offset`` gets its id header's bytes."""


class Reader(Protocol):
    """A read_committed consumer in assign mode over given partitions, from offset 0 (no group
    membership, no committed offsets). ``poll`` raises ``ClientError`` when the client reports a
    failure."""

    def poll(self, max_records: int, timeout_s: float) -> list[Record]:
        """The next records, at most ``max_records``, waiting at most ``timeout_s`` for the first."""

    def close(self) -> None:
        """Leave; never raises."""


class GroupReader(Protocol):
    """A read_committed consumer in a consumer group (subscribe mode), whose positions a
    transaction commits (consume-transform-produce). Every call raises ``ClientError`` when the
    client reports a failure."""

    def poll(self, max_records: int, timeout_s: float) -> list[Record]:
        """The next records, at most ``max_records``, waiting at most ``timeout_s`` for the first."""

    def positions(self) -> dict[tuple[str, int], int]:
        """``{(topic, partition): next offset}`` of the partitions assigned now (negative: none yet)."""

    def group_metadata(self) -> object:
        """The group generation ``Client.send_offsets`` needs (a client of the same library's)."""

    def rewind(self, timeout_s: float) -> None:
        """Back to the group's committed offsets (what an aborted transaction did not move)."""

    def close(self) -> None:
        """Leave the group; never raises."""
