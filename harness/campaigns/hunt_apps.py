"""The shipped apps as drawn workloads of ``eos-chaos hunt`` (docs/HUNT.md, docs/APPS.md): which app a
seed puts beside the harness's producers, and its workload entry as the library's scenario of it
writes it (its command, readiness, feeder and contract, so the checker judges it by its contract).

The app entry is taken from the shipped scenario file, never copied here: a change to how a shipped
app is run (a flag, a readiness line, a JVM option) reaches the hunt's draws too."""

from __future__ import annotations

import copy
import functools
import random
from typing import Any

import yaml

from harness.base.errors import ConfigError
from harness.run.scenario import LIBRARY

#: The shipped apps the hunt draws, each with the library scenario whose ``app`` entry it runs.
APPS = {"streams-count-sum": "app-streams-count-sum", "kafka-copier": "app-kafka-copier",
        "py-copier": "app-py-copier", "go-copier": "app-go-copier"}
#: ``--apps`` spellings beside the apps' names: every seed draws an app or none (``drawn``), or none
#: (``none``: the producers-only hunt of the first five draws).
DRAWN = "drawn"
NONE = "none"
#: With ``drawn``, a seed runs no app this many times as often as it runs any one app: a third of
#: the seeds keep the producers' draw alone, whose findings came fastest (docs/HUNT.md).
NO_APP_WEIGHT = 2
#: A drawn app's working folder: its instance's own (``{workdir}``), not the scenario file's folder
#: (the default, made absolute at load), which differs between the shards of one hunt and would make
#: their drawn scenarios differ (``matrix merge`` refuses them). A shipped app's launcher is a module
#: of the harness (``{python} -m harness.apps...``): it needs no folder of its own.
CWD = "{workdir}"
#: An app instance's count: one (two cores shared with three brokers and the producers' JVMs), or
#: the shipped scenario's (two: a rebalance that fences a zombie instance), one twice as likely.
COUNTS = (1, 1, None)


def pool(spelled: str) -> tuple[str, ...] | None:
    """The apps ``--apps`` names: None for ``drawn`` (a seed may draw none), ``()`` for ``none``, else
    the named apps (every seed draws one of them); ConfigError naming the flag and what is allowed."""
    if spelled.strip() == DRAWN:
        return None
    if spelled.strip() == NONE:
        return ()
    names = tuple(dict.fromkeys(n.strip() for n in spelled.split(",") if n.strip()))
    bad = [n for n in names if n not in APPS]
    if bad or not names:
        raise ConfigError(f"--apps {spelled!r}: {', '.join(bad) or 'no app'} is not a shipped app; give {DRAWN}, "
                          f"{NONE}, or some of {', '.join(APPS)}, comma-separated")
    return names


def choose(seed: int, apps: tuple[str, ...] | None) -> str | None:
    """The app seed ``seed`` runs (None: none), from ``apps`` as ``pool`` gives it. Its own random
    stream: what else the seed draws does not change which app it runs."""
    rnd = random.Random(f"hunt-app/{seed}")
    if apps is None:
        weights = {"": NO_APP_WEIGHT, **{a: 1 for a in APPS}}
        return rnd.choices(list(weights), weights=list(weights.values()))[0] or None
    return rnd.choice(apps) if apps else None


@functools.cache
def _shipped(app: str) -> tuple[dict[str, Any], list[str]]:
    data = yaml.safe_load((LIBRARY / f"{APPS[app]}.yaml").read_text())
    entry = next(w for w in data["workloads"] if w["kind"] == "app")
    return entry, list(data["topics"])


def workload(app: str, rnd: random.Random) -> tuple[dict[str, Any], list[str]]:
    """The drawn scenario's entry of ``app`` (the shipped one, its instance count drawn) and the
    topics it needs (its shipped scenario's: none of them is the hunt's own)."""
    entry, topics = _shipped(app)
    drawn = copy.deepcopy(entry)
    count = rnd.choice(COUNTS)
    drawn["count"] = count if count is not None else entry.get("count", 1)
    drawn["settings"].setdefault("cwd", CWD)
    return drawn, list(topics)
