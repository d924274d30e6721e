"""The outcome of a workload operation that met an error: ``ok``/``fail``/``info`` (Jepsen's
model: ``fail`` = it definitely did not happen, ``info`` = unknown), whether the producer instance
must retire, and which event its retirement records. One pure function of plain facts, so every
client and every workload applies the same rules (tests/unit/test_outcome.py holds one row per rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from harness.history.model import FAIL, FENCED, INFO, RETIRED
from harness.workloads.client import ErrorFacts


class Phase(Enum):
    """Where in its life an operation met the error."""

    INIT = "init"              # init_transactions: nothing written by this instance yet
    BEFORE_COMMIT = "before"   # begin, sends, send_offsets, flush: no commit requested yet
    COMMIT = "commit"          # commit_transaction was called (maybe retried)
    PLAIN_SEND = "send"        # a non-transactional send (no idempotence)
    POLL = "poll"              # a consumer's poll


@dataclass(frozen=True)
class Outcome:
    #: the completion's type: ``fail`` or ``info`` (harness.history.model)
    type: str
    #: this producer (or consumer) instance cannot go on: the workload starts a new process id
    retire: bool
    #: the history event recorded when retiring (``fenced``/``retired``), None: none recorded
    event: str | None = None


def should_abort(phase: Phase, facts: ErrorFacts) -> bool:
    """Whether to try ``abort_transaction`` after ``facts`` met in ``phase``. Never after a fence or
    a fatal error (the producer can do nothing more); always before commit (the transaction must
    end); during commit only when the client says the transaction can only be aborted."""
    if facts.fenced or facts.fatal:
        return False
    if phase is Phase.BEFORE_COMMIT:
        return True
    return phase is Phase.COMMIT and facts.txn_requires_abort


def retry_commit(facts: ErrorFacts) -> bool:
    """Whether a failed commit call is tried again (librdkafka: "retry call to resume"): a retriable
    error that does not require an abort. The caller bounds how long it keeps retrying."""
    return facts.retriable and not facts.txn_requires_abort


def classify(phase: Phase, facts: ErrorFacts, sole_writer: bool = False, aborted: bool = False,
             abort_fenced: bool = False) -> Outcome:
    """The outcome of an operation that met ``facts`` in ``phase``; ``aborted``: an abort was tried
    (``should_abort``) and succeeded; ``abort_fenced``: it was tried and refused because this
    instance is fenced. ``sole_writer``: no other process uses this ``transactional.id`` while this
    one lives (the txn-producer's incarnations follow one another)."""
    if phase is Phase.INIT:
        # Nothing was written by this instance yet, so a failed init changes nothing.
        return Outcome(FAIL, retire=True)
    if phase is Phase.PLAIN_SEND:
        # Without idempotence a send that failed after retries (NOT_LEADER_OR_FOLLOWER, a timeout)
        # may still have been written: never a definite failure.
        return Outcome(INFO, retire=False)
    if phase is Phase.POLL:
        return Outcome(INFO, retire=True)  # the next consumer instance starts again from offset 0
    if facts.fenced or facts.fatal:
        # Before commit: this instance's transaction can only end aborted -> fail. During commit the
        # request may have been a retry of one that already committed (its response lost), so a
        # fence or fatal error there proves nothing -> info, resolved from the final reads. A sole
        # writer is fenced during commit only by the coordinator aborting the transaction on its
        # timeout (a completed or preparing commit is never timed out, and a retried EndTxn of a
        # completed commit succeeds): a definite abort, fail. The checker holds us to it: a fail
        # whose values are committed fires. That argument is about a fence only: a fatal error
        # that is not one says nothing of what the coordinator did (kafka-python makes an EndTxn
        # that timed out fatal, "Could not execute transactional request for unknown reasons",
        # and the held EndTxn may commit after), so it stays info.
        definite = phase is Phase.BEFORE_COMMIT or (sole_writer and facts.fenced)
        return Outcome(FAIL if definite else INFO, retire=True, event=FENCED if facts.fenced else RETIRED)
    if aborted:
        return Outcome(FAIL, retire=False)  # the transaction is definitely gone
    if phase is Phase.BEFORE_COMMIT:
        # Without a commit request the coordinator can only abort (or time out) this transaction;
        # the abort failed, so this producer cannot go on. An abort refused as fenced retires it
        # for that reason (a Java producer frozen while its epoch was bumped met a flush timeout
        # first, then PRODUCER_FENCED on its abort: kafka-bug-20090)
        return Outcome(FAIL, retire=True, event=FENCED if abort_fenced else None)
    # A commit whose result is unknown (timeout, lost connection, an abort refused or failing).
    return Outcome(INFO, retire=True)


def indefinite(outcome_type: str, met: Sequence[ErrorFacts], commit_retried: bool) -> str | None:
    """Why a transaction that ended as ``outcome_type``, after meeting the errors ``met`` (each
    retried commit's and the final one), may have left a request of this producer epoch in flight;
    None: it cannot have. A producer set to ``recreate_on_indefinite`` is then dropped and a new one
    inits the same ``transactional.id``: that bumps the epoch, so the late request is fenced instead
    of landing on the next transaction of the same epoch (KAFKA-17754: with the classic transaction
    protocol a delayed EndTxn commits or aborts whatever transaction that epoch has open then).

    - an unknown outcome (``info``): nobody knows what was sent and not answered;
    - a call that timed out: the client gave up waiting, not the request; it may be queued in the
      client, in a slow link or in the broker;
    - a commit that needed more than one call, even one that then succeeded: the first EndTxn may
      have gone out on a connection that died (its response lost) and still reach the coordinator
      after the retry did; the success only says one copy arrived.

    A definite error (a broker's answer: fenced, an abortable error, an abort that went through
    without any of the above) proves its request was handled, so nothing of it is left in flight."""
    if outcome_type == INFO:
        return "the transaction's outcome is unknown"
    timed_out = next((f for f in met if f.timed_out), None)
    if timed_out is not None:
        return f"a call timed out ({timed_out.describe()})"
    if commit_retried:
        return "its commit was retried"
    return None
