"""Fault schedules: a scenario's explicit faults plus, when it has a ``mix``, faults drawn from the
seed. The same scenario and seed always give the same plan (time, kind, parameters); the system
under test may still behave differently. ``eos-chaos run NAME --seed S --dry-run --json`` prints it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from chaos.faults import REGISTRY, Fault, parse


class Mix(Protocol):
    """A scenario's ``mix`` (harness.run.scenario.Mix), as far as planning reads it."""

    @property
    def kinds(self) -> Sequence[tuple[str, float]]: ...
    @property
    def start(self) -> float: ...
    @property
    def duration(self) -> tuple[float, float]: ...
    @property
    def gap(self) -> tuple[float, float]: ...
    @property
    def quiet_end(self) -> float: ...
    @property
    def workloads(self) -> Sequence[str]: ...


class Planned(Protocol):
    """A scenario (harness.run.scenario.Scenario), as far as planning reads it."""

    @property
    def name(self) -> str: ...
    @property
    def duration(self) -> float: ...
    @property
    def faults(self) -> Sequence[Fault]: ...
    @property
    def mix(self) -> Mix | None: ...


def plan(sc: Planned, seed: int) -> list[Fault]:
    """Every fault of the run, in start order."""
    faults = list(sc.faults)
    mix = sc.mix
    if mix is not None:
        # A generator of our own, seeded by scenario name and seed only: nothing else draws from it.
        rnd = random.Random(f"{sc.name}/{seed}")
        kinds = [k for k, _ in mix.kinds]
        weights = [w for _, w in mix.kinds]
        t = mix.start
        while True:
            duration = round(rnd.uniform(*mix.duration), 1)
            if t + duration > sc.duration - mix.quiet_end:
                break
            kind = rnd.choices(kinds, weights)[0]
            faults.append(drawn(kind, round(t, 1), duration, lambda: rnd.choice(mix.workloads) if mix.workloads else None))
            t += duration + rnd.uniform(*mix.gap)
    return sorted(faults, key=lambda f: f.at)


def takes_workload(kind: str) -> bool:
    """A kind whose faults name the workload they hit (``workload``: kill-workload, pause-workload)."""
    return "workload" in REGISTRY[kind].model_fields


def drawn(kind: str, at: float, duration: float, workload: Callable[[], str | None]) -> Fault:
    """One fault a mix draws: its kind, time and duration, and for a kind that takes one the workload
    ``workload`` picks (called only then: the schedule's random draws stay as they were). Pydantic's
    ValidationError for a kind a mix cannot draw (one with another required field)."""
    fields: dict[str, Any] = {"at": at, "kind": kind, "duration": duration}
    if takes_workload(kind):
        picked = workload()
        if picked is not None:
            fields["workload"] = picked
    return parse(fields)


def as_json(faults: list[Fault]) -> list[dict[str, Any]]:
    """The plan as JSON-ready dicts, each with its kind's fields only."""
    return [f.model_dump(exclude_defaults=False) for f in faults]
