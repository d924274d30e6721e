"""What the nemesis needs of the workload processes it faults: ``WorkloadControl``, a protocol
``harness.run.supervisor.Supervisor`` implements, and ``Progress``, whether a workload made progress
lately (``harness.run.readiness.ProgressLog``). chaos/ drives workloads only through them, so it never
imports the workloads, the Spark job or the supervisor.
"""

from __future__ import annotations

import threading
from typing import Any, Literal, Protocol

#: What an armed driver fault does to the Spark driver at its window: SIGKILL or SIGSTOP it.
DriverAction = Literal["kill", "freeze"]


class Incarnation(Protocol):
    """An older process of a workload, left alive (frozen) while a newer one runs."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...


class WorkloadControl(Protocol):
    def of_kind(self, kind: str) -> list[str]:
        """The names of the workload processes of ``kind`` (``reader-0``, ...)."""
        ...

    def using_transactional_id(self, transactional_id: str) -> list[str]:
        """The names of the workload processes whose producer uses ``transactional_id`` (a
        txn-producer instance's is its own, fixed by its name; with ``producers: N``, each of its
        producers has one)."""
        ...

    def alive(self, name: str) -> bool: ...

    def kill(self, name: str) -> None: ...

    def pause(self, name: str) -> None: ...

    def resume(self, name: str) -> None: ...

    def restart(self, name: str) -> None: ...

    def restarts_itself(self, name: str) -> bool:
        """True when the supervisor restarts ``name`` whenever it dies (a Spark driver)."""
        ...

    def arm_driver(self, name: str, window: str, action: DriverAction) -> int:
        """Arm the Spark driver ``name`` to ``action`` itself at ``window`` of its next
        micro-batch; returns the pid of the process armed."""
        ...

    def await_driver_fault(self, name: str, action: DriverAction, stop: threading.Event) -> bool:
        """Whether the armed driver did it (False: ``stop`` came first); disarmed either way."""
        ...

    def new_incarnation(self, name: str) -> Incarnation:
        """Start a new process of ``name`` while the current (frozen) one lives on; returns the old one."""
        ...

    def end_zombie(self, name: str, old: Incarnation) -> None:
        """Resume ``old`` and wait until it is fenced and exits."""
        ...

    def await_zombie_ready(self, name: str) -> None:
        """Wait until the zombie's first instance ``name`` has opened its transaction (or died)."""
        ...

    def start_registered(self, name: str) -> None:
        """Start ``name``, registered but not started (the zombie's second instance)."""
        ...

    def release_zombie(self) -> None:
        """Let the resumed first zombie instance go on to its commit."""
        ...

    def wait(self, name: str, timeout: float) -> int:
        """``name``'s exit code, once it has exited (``subprocess.TimeoutExpired`` after ``timeout``)."""
        ...

    def arm_executor(self, name: str, action: DriverAction) -> None:
        """Arm the executors of Spark job ``name``: the first task to get inside its transaction
        does ``action`` to its executor JVM (and its own Python worker)."""
        ...

    def await_executor_fault(self, name: str, stop: threading.Event) -> dict[str, Any] | None:
        """What the armed task recorded (``executor_pid``, ``worker_pid``, ``batch``, ``tp``) once it
        fired (None: ``stop`` came first); disarmed either way."""
        ...


class SparkControl(Protocol):
    """What the nemesis needs of a standalone Spark cluster (clusters/spark/standalone.py implements it)."""

    def executors(self) -> list[dict[str, Any]]:
        """The executor JVMs running now: ``pid``, ``worker`` (1-based), ``executor_id``, ``app_id``."""
        ...

    def worker_ids(self) -> list[int]: ...

    def kill_worker(self, i: int) -> int:
        """SIGKILL worker ``i``; its pid."""
        ...

    def start_worker(self, i: int) -> None:
        """Start worker ``i`` again and wait until the master has it."""
        ...

    def signal_tree(self, pid: int, sig: int) -> list[int]:
        """Send ``sig`` to ``pid`` and every process under it (an executor and its Python workers)."""
        ...


class Progress(Protocol):
    """What the nemesis asks before a fault aimed at a workload: has it made progress lately?
    (harness/run/readiness.py ``ProgressLog`` answers from the history files.)"""

    def finished_since(self, name: str, since_ns: int) -> int | None:
        """How many ops that show progress (a transaction, a copy, a micro-batch, an app's output
        read) workload process ``name`` finished at or after ``since_ns`` on the history's clock;
        None when its kind shows no progress the history can tell (a reader)."""
        ...
