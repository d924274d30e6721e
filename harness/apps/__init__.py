"""Applications shipped to be put under test as ``app`` workloads (docs/APPS.md): real exactly-once
consume-transform-produce programs in their own languages, which the library's app scenarios run and
judge as black boxes, as a user's own app would be. Each is built into the cache the first time a run
needs it (or by ``eos-chaos setup --all``) and started by a launcher module,
``{python} -m harness.apps.<module> ARGS``, that builds what is missing and then execs the program, so
signals (the workload faults' SIGKILL, SIGSTOP, SIGTERM) reach it directly."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ShippedApp:
    name: str
    #: the launcher: ``python -m MODULE ARGS``
    module: str
    #: what it is, in one line (the docs' table)
    what: str
    #: build it into the cache if missing (idempotent; raises ConfigError / EnvironmentProblem)
    prepare: Callable[[], object]


def _prepare_of(module: str) -> Callable[[], object]:
    """``module.prepare``, imported when called: importing a launcher here would load it twice under
    ``python -m`` (runpy warns when the module it runs is already in ``sys.modules``)."""
    return lambda: importlib.import_module(module).prepare()


#: name -> the app; each entry's module registers nothing else
SHIPPED: dict[str, ShippedApp] = {
    "go-copier": ShippedApp("go-copier", "harness.apps.go_copier",
                            "Go, franz-go's GroupTransactSession: each input copied with ':go' appended (--unsafe: no transactions)",
                            _prepare_of("harness.apps.go_copier")),
}


def prepare_all() -> list[str]:
    """Build every shipped app that is not built yet (``eos-chaos setup --all``); their names."""
    for app in SHIPPED.values():
        app.prepare()
    return list(SHIPPED)
