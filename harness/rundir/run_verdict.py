"""A run's ``verdict.json``, typed: every reader (the report, compare, the index, the CLI's summary,
campaigns, benches, the pytest plugin) reads it through ``RunVerdict``, never as a plain dict.

verdict.json (format 2, assembled by harness/run/verdict_file.py) is the checker's verdict of the
history (``valid``, ``unknown_because``, ``checks``, the figures in ``stats``, ``history``,
``engine``: harness/checker/verdict.py) + ``run``, the run's facts from its journal
(``Journal.run_facts``; None for a folder made before runs kept a journal, with a ``note``) +
``expected``, the scenario's expectation, and ``as_expected``. A format-1 verdict (older folders)
kept the run's facts among its ``stats``; ``RunVerdict.facts`` reads either.

``RunVerdict`` keeps the JSON it was made from: ``to_json`` gives it back as it was, so a verdict
read and written again is the same file."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from harness.base.errors import ConfigError, problems_in_brief
from harness.rundir.journal import AppFacts
from harness.rundir.runfolder import RunFolder

#: ``valid``: True, False or "unknown" (harness/checker/verdict.py ``Validity``)
Validity = bool | Literal["unknown"]


class _Part(BaseModel):
    # a newer eos-chaos may add fields: they still read (and ``to_json`` keeps them)
    model_config = ConfigDict(extra="allow", strict=True)


class CheckRecord(_Part):
    """One check's result as verdict.json holds it (harness/checker/verdict.py ``CheckResult``)."""

    #: None: the check crashed (``error``, ``traceback`` say how)
    count: int | None
    examples: list[dict[str, Any]] = Field(default_factory=list)
    #: the history held nothing this check could look at (it counts 0 but says so)
    skipped: str | None = None
    error: str | None = None
    traceback: str | None = None
    #: an app contract's check: the findings of each app it judged; ``app-pipeline``: each chain's
    #: end to end, by its last stage (None: not an app's check, or a verdict from before it was kept)
    by_app: dict[str, int] | None = None


class TxnCounts(_Part):
    """``stats.txn``: the transactions by outcome."""

    ok: int = 0
    fail: int = 0
    info: int = 0


class SparkFigures(_Part):
    """``stats.spark``: the Spark job's micro-batches (a run with a Spark job only)."""

    batches: int = 0
    replays_skipped: int = 0
    #: Spark's whole trigger per micro-batch: ``p50``, ``p95``, ``max`` (ms)
    trigger_ms: dict[str, float | None] = Field(default_factory=dict)
    #: per driver killed, seconds until its successor got a batch through (None: none did)
    restart_to_first_batch_s: list[float | None] = Field(default_factory=list)
    #: per executor or worker killed (a standalone cluster), seconds until the next batch
    executor_kill_to_batch_s: list[float | None] = Field(default_factory=list)


class Throughput(_Part):
    """``stats.throughput``."""

    ok_txn_per_s: float | None = None
    committed_values_per_s: float | None = None


class Figures(_Part):
    """The figures of ``stats`` that campaigns, benches and the expectation judge by; the rest (and
    these) stay in ``RunVerdict.stats`` as the checker wrote them."""

    txn: TxnCounts = Field(default_factory=TxnCounts)
    fenced: int = 0
    recreated: int = 0
    committed_values: int = 0
    #: records read, by kind of read (``final_committed``, ...)
    reads: dict[str, int] = Field(default_factory=dict)
    #: how often the clients met each error, by name
    errors_seen: dict[str, int] = Field(default_factory=dict)
    spark: SparkFigures | None = None
    throughput: Throughput = Field(default_factory=Throughput)


class RunFacts(_Part):
    """How the run went apart from its history (verdict.json's ``run``: ``Journal.run_facts``)."""

    #: None: not known (no heal recorded)
    healed: bool | None = None
    heal_problems: list[str] = Field(default_factory=list)
    nemesis_errors: list[str] = Field(default_factory=list)
    interrupted: bool = False
    faulted_at_start: list[str] = Field(default_factory=list)
    workloads_killed_at_stop: list[str] = Field(default_factory=list)
    not_recovered: list[str] = Field(default_factory=list)
    transaction_version: int | None = None
    features: dict[str, int] = Field(default_factory=dict)
    #: ``Journal.faults_hit``: ``faults``, ``hit_nothing``, ``began_without_progress`` (absent: no record)
    faults_hit: dict[str, int] | None = None
    #: an app under test: its drain, restarts, exits, outputs read (``Journal.app``)
    app: AppFacts | None = None


class RunVerdict(_Part):
    """A run's ``verdict.json``, format 1 or 2 (made by ``of`` or ``load``, which check it whole)."""

    format: int = 1
    valid: Validity
    unknown_because: list[str] = Field(default_factory=list)
    checks: dict[str, CheckRecord]
    #: every figure of the history as the checker wrote it (``figures``: the ones judged by, typed)
    stats: dict[str, Any]
    #: how much history was checked: ``ops``, ``truncated`` files (and a ``note`` when any)
    history: dict[str, Any] = Field(default_factory=dict)
    engine: str = "default"
    #: format 2: the run's facts; None: the folder has no journal (``note`` says so)
    run: RunFacts | None = None
    note: str | None = None
    #: the scenario's expectation (harness/run/scenario.py ``Expect``); None: none known
    expected: dict[str, Any] | None = None
    as_expected: bool | None = None

    _json: dict[str, Any] = PrivateAttr(default_factory=dict)
    _figures: Figures = PrivateAttr(default_factory=Figures)
    _facts: RunFacts = PrivateAttr(default_factory=RunFacts)

    @classmethod
    def of(cls, data: Mapping[str, Any], where: Path | str = "verdict") -> RunVerdict:
        """The verdict in ``data`` (a verdict.json's content, read from ``where``); ``ConfigError``
        naming ``where`` and the first field that is not a verdict's, else."""
        under: tuple[str, ...] = ()  # where the part being checked sits in the file
        try:
            v = cls.model_validate(dict(data))
            under = ("stats",)
            v._figures = Figures.model_validate(v.stats)
            if v.format < 2:  # a format-1 verdict kept the run's facts among its figures
                v._facts = RunFacts.model_validate({k: x for k, x in v.stats.items() if k in RunFacts.model_fields})
            elif v.run is not None:
                v._facts = v.run
        except ValidationError as exc:
            raise ConfigError(f"{where}: not a verdict ({problems_in_brief(exc, under)})") from None
        v._json = dict(data)
        return v

    @classmethod
    def load(cls, folder: RunFolder) -> RunVerdict | None:
        """The folder's verdict; None when it has none yet. ``ConfigError`` when it is broken."""
        data = folder.read_json(folder.verdict)
        return None if data is None else cls.of(data, folder.verdict)

    def to_json(self) -> dict[str, Any]:
        """The JSON this verdict was made from, as it was (verdict.json's content)."""
        return dict(self._json)

    @property
    def figures(self) -> Figures:
        """The figures of ``stats`` judged by, typed."""
        return self._figures

    @property
    def facts(self) -> RunFacts:
        """The run's facts: ``run`` (format 2; none recorded: all unknown); a format-1 verdict kept
        them among its ``stats``."""
        return self._facts

    @property
    def label(self) -> str:
        """``valid``, ``invalid`` or ``unknown``."""
        return "valid" if self.valid is True else "invalid" if self.valid is False else "unknown"

    def fired(self) -> dict[str, CheckRecord]:
        """The checks that found something, in verdict.json's order."""
        return {name: c for name, c in self.checks.items() if c.count}

    def counts(self) -> dict[str, int]:
        """How many anomalies each check that found something found."""
        return {name: c.count for name, c in self.checks.items() if c.count}
