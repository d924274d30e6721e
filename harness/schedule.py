"""Fault schedules: a scenario's explicit faults plus, when it has a ``mix``, faults drawn from the
seed. The same scenario and seed always give the same plan (time, kind, parameters); the system
under test may still behave differently. ``eos-chaos run NAME --seed S --dry-run --json`` prints it.
"""

from __future__ import annotations

import random
from typing import Any

from harness.scenario import Fault, Scenario


def plan(sc: Scenario, seed: int) -> list[Fault]:
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
            workload = rnd.choice(mix.workloads) if kind == "kill-workload" and mix.workloads else None
            faults.append(Fault.model_validate({"at": round(t, 1), "kind": kind, "duration": duration, "workload": workload}))
            t += duration + rnd.uniform(*mix.gap)
    return sorted(faults, key=lambda f: f.at)


def as_json(faults: list[Fault]) -> list[dict[str, Any]]:
    return [f.model_dump(exclude_defaults=False) for f in faults]
