"""An app under test's phases in a run (docs/APPS.md), on the functions of harness/phases/app_run.py
and app_drain.py: its command and contract function looked for before anything starts; its contract
recorded and the topics' ends taken before its processes start; its own readiness timeout; its
progress read from its output's reader; the app and that reader running on through heal and
draining; then its keyed output scans, the undeclared topics it wrote, and its function's expected
outputs. What it learns goes to the journal's ``app``."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import partial
from typing import Any

from harness.base.errors import ConfigError
from harness.history.model import APP_CONTRACT, APP_READER, APP_STRAY, EXPECT, OK, POLL
from harness.phases import app_drain, app_expect, app_run
from harness.phases.kind_run import KindRun, OpTest, Processes, RunContext, ScenarioView
from harness.rundir.journal import AppDrain, AppFacts, AppStageFacts
from harness.workloads.registry import AppSettings

log = logging.getLogger(__name__)


def _output_read(op: Mapping[str, Any]) -> bool:
    """A poll of the app's output that returned records."""
    return op.get("f") == POLL and op.get("type") == OK and op.get("app") is not None and bool(op.get("value"))


class AppRun(KindRun):
    drain_phase = "draining the app"

    def __init__(self, kind: str, scenario: ScenarioView) -> None:
        super().__init__(kind, scenario)
        #: the app, or a pipeline's stages in the order written (the first fed by the harness)
        self.stages: list[AppSettings] = app_run.stages_of(scenario)
        self.ends_before: dict[str, int] = {}

    def preflight(self) -> None:
        app_run.preflight(self.scenario)

    def own_topics(self) -> list[str]:
        return app_run.outputs(self.scenario)

    def started(self, ctx: RunContext) -> None:
        for s in self.stages:
            ctx.rec.event("runner", APP_CONTRACT, app_run.contract_value(s), type_="ok")
        self.ends_before = app_run.topic_ends(ctx.cluster.direct_bootstrap)  # to find what it writes undeclared

    def ready_timeout_s(self) -> float | None:
        return max(s.ready_timeout_s for s in self.stages)

    def through_heal(self, processes: Processes) -> tuple[str, ...]:
        # the app and the readers of its output run on through heal, to process what it was given
        return (*app_run.instances(processes), *processes.of_kind(APP_READER))

    def drain(self, ctx: RunContext, heal_problems: list[str]) -> None:
        """The app instances the run's end left dead started again, then the drain of each stage in
        turn, the first first (a later stage's input is complete once the one before it is drained);
        none when the heal failed or the run was interrupted: the final reads come at once."""
        sup, interrupted = ctx.processes, ctx.journal.interrupted
        facts = AppFacts(restarted_for_drain=[], drain=None)
        if heal_problems or interrupted:
            facts.drain = AppDrain(drained=False, how="skipped: " + ("interrupted" if interrupted else "not healed"))
            ctx.journal.app = facts
            return
        facts.restarted_for_drain = app_run.restart_dead(sup)
        names = app_run.stage_instances(self.scenario)
        drains: dict[str, AppDrain] = {}
        for s in self.stages:
            log.info(f"draining app {s.name} (at most {s.drain_s:g}s)")
            drains[s.name] = app_drain.drain(ctx.cluster.direct_bootstrap, s, self.scenario.topic_partitions(),
                                             list(s.inputs), partial(app_run.running_again, sup.run_dir, names.get(s.name, [])))
            log.info(f"app {s.name} drain: {drains[s.name].model_dump(mode='json')}")
        facts.drain = drains[self.stages[0].name]
        if len(self.stages) > 1:
            facts.stages = {name: AppStageFacts(drain=d) for name, d in drains.items()}
        ctx.journal.app = facts

    def stopped(self, ctx: RunContext) -> None:
        """How each instance's wrapper exited, and what the log of each that failed says (its
        exception and ERROR lines: ``app_run.failed_logs``), into the journal."""
        exits = {n: ctx.processes.exit_codes.get(n) for n in app_run.instances(ctx.processes)}
        facts = ctx.journal.app if ctx.journal.app is not None else AppFacts()
        facts.exits = exits
        logs = app_run.failed_logs(ctx.run_dir, exits)
        if logs:
            facts.logs = logs
            for name, d in logs.items():
                said = d.headline()
                log.info(f"{name} (its wrapper's exit: {exits.get(name)}): its log says {said or 'no exception, no ERROR line'}")
        ctx.journal.app = facts

    def final_reads(self, ctx: RunContext, stalled: bool) -> None:
        """Each app's output scanned with keys, then its contract function's expected outputs recorded
        (a later stage's over its upstream's scanned output and expected outputs). A function that
        fails here is on record (``journal.app``) and leaves the check unable to judge."""
        rec, bootstrap = ctx.rec, ctx.cluster.direct_bootstrap
        facts = ctx.journal.app if ctx.journal.app is not None else AppFacts()
        facts.outputs_read = sum(app_run.final_scans(bootstrap, s, self.scenario.topic_partitions(), rec,
                                                        stable=not stalled) for s in self.stages)
        stray = app_run.stray_topics(self.ends_before, app_run.topic_ends(bootstrap), self.stages, self.scenario.topics)
        if stray:
            rec.event("runner", APP_STRAY, {"app": self.stages[0].name, "topics": stray}, type_="ok")
        made: dict[str, list[app_expect.Output]] = {}
        for s in self.stages:
            made[s.name] = []
            try:
                n = app_expect.record(ctx.run_dir, s, rec, ctx.topic_names, app_run.cwd_of(s),
                                      made.get(s.upstream or "", []), made[s.name])
                if s.contract.functions():
                    for at in _written_at(facts, s, self.stages):
                        at.expected_inputs = n
            except ConfigError as exc:
                for at in _written_at(facts, s, self.stages):
                    at.function_error = str(exc)
                log.info(f"app {s.name}: the contract's function could not be applied: {exc}")
                # on record in the history: the check says why it cannot judge (unknown), from the folder alone
                rec.event("runner", EXPECT, {"app": s.name, "inputs": [], "error": str(exc)}, type_="ok")
        ctx.journal.app = facts

    @classmethod
    def progress(cls, kind: str, name: str) -> tuple[str, OpTest] | None:
        """An instance's progress is the app's: its output's reader (which reads every instance's
        output; in a pipeline, the first stage's output) read records."""
        return APP_READER, _output_read


def _written_at(facts: AppFacts, s: AppSettings, stages: list[AppSettings]) -> list[AppFacts | AppStageFacts]:
    """Where a fact of app ``s`` goes in the journal's app facts: the first app's at the top (the
    report reads them there), each stage's of a pipeline under ``stages.<name>`` as well."""
    return ([facts] if s is stages[0] else []) + ([facts.stage(s.name)] if len(stages) > 1 else [])
