"""Fault schedules: a scenario's explicit faults plus, when it has a ``mix``, faults drawn from the
seed. The same scenario and seed always give the same plan (time, kind, parameters); the system
under test may still behave differently. ``eos-chaos run NAME --seed S --dry-run --json`` prints it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from chaos.faults import REGISTRY, Fault, parse
from harness.base.errors import ConfigError

#: The most faults a mix may plan in one run (a fault every 4.3 s through a day's run; the library's
#: busiest mix plans about 10,000 in a day): validation refuses a mix expected to plan more (``mix_problem``).
MAX_MIX_FAULTS = 20_000
#: ``plan`` stops with an error after this many, whatever it is given: no input plans for ever. Twice
#: the validated bound, so a validated mix's seed never reaches it (its count is close to expected).
MAX_PLANNED = 2 * MAX_MIX_FAULTS
#: A planned fault's duration is rounded to this many seconds.
RESOLUTION_S = 0.1


class MixView(Protocol):
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
    def mix(self) -> MixView | None: ...


def mix_problem(mix: MixView, run_s: float) -> str | None:
    """Why ``mix`` cannot be planned in a run of ``run_s`` seconds (None: it can): its faults and
    gaps take no time, so planning would never reach the run's end, or it would plan more than
    ``MAX_MIX_FAULTS``."""
    # The mean time from one fault's start to the next's, at least: a drawn duration is rounded to
    # RESOLUTION_S, so may lose up to half of it (0.04 s faults are planned as 0 s).
    step = max(sum(mix.duration) / 2 - RESOLUTION_S / 2, 0.0) + sum(mix.gap) / 2
    span = f"duration {_pair(mix.duration)} and gap {_pair(mix.gap)}"
    if step <= 0:
        return (f"{span}: the faults (planned to {RESOLUTION_S:g}s) and the gaps between them take no time, so the "
                "plan would never reach the run's end; give duration or gap an upper bound above 0")
    window = run_s - mix.quiet_end - mix.start
    if window / step > MAX_MIX_FAULTS:
        return (f"{span}: about {window / step:,.0f} faults in the {window:g}s from start to quiet_end of a {run_s:g}s "
                f"run; a mix plans at most {MAX_MIX_FAULTS:,}: give duration or gap larger bounds")
    return None


def plan(sc: Planned, seed: int) -> list[Fault]:
    """Every fault of the run, in start order. ConfigError if the mix has not reached the run's end
    after ``MAX_PLANNED`` faults (a validated scenario's never does: ``mix_problem``)."""
    faults = list(sc.faults)
    mix = sc.mix
    if mix is not None:
        # A generator of our own, seeded by scenario name and seed only: nothing else draws from it.
        rnd = random.Random(f"{sc.name}/{seed}")
        kinds = [k for k, _ in mix.kinds]
        weights = [w for _, w in mix.kinds]
        t = mix.start
        for _ in range(MAX_PLANNED):
            duration = round(rnd.uniform(*mix.duration), 1)
            if t + duration > sc.duration - mix.quiet_end:
                break
            kind = rnd.choices(kinds, weights)[0]
            faults.append(drawn(kind, round(t, 1), duration, lambda: rnd.choice(mix.workloads) if mix.workloads else None))
            t += duration + rnd.uniform(*mix.gap)
        else:
            raise ConfigError(f"scenario {sc.name}: its mix planned {MAX_PLANNED:,} faults and had not reached the run's "
                              f"end at {t:g}s of {sc.duration:g}s (duration {_pair(mix.duration)}, gap {_pair(mix.gap)}); "
                              "give duration or gap larger bounds")
    return sorted(faults, key=lambda f: f.at)


def _pair(bounds: tuple[float, float]) -> str:
    """``[3, 8]``: a mix's (shortest, longest) as the scenario file writes it."""
    return f"[{bounds[0]:g}, {bounds[1]:g}]"
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
