"""A child's line to the process that started it: the child stops by itself within seconds when
that process dies, even by SIGKILL.

The runner side (``handoff``) makes one pipe per process and keeps its write end open for as long as
the process lives; each child gets the read end (an inherited fd named in ``ENV_FD``). When the
runner exits in any way the kernel closes the write end, so the child's blocking read returns EOF:
the child then stops as on SIGTERM (``watch``'s ``on_lost``), and exits hard after
``LOST_GRACE_S`` if the operation in hand does not finish. A child that leads its own process group
(``procs.spawn`` makes every workload one) takes the whole group along: a Spark driver's JVM too.

A pipe rather than a heartbeat: no timer to tune, and nothing to miss when the runner is merely
slow. Not ``PR_SET_PDEATHSIG``: it fires when the *thread* that forked the child exits, and the
supervisor starts workloads from its keeper thread. Tags and reclaim (``clusters/``) remain the
second line of defence: a SIGSTOPped child cannot notice anything.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

#: The environment variable that names the inherited read end in a child.
ENV_FD = "EOS_CHAOS_LIFELINE_FD"
#: Once the runner is gone nobody checks this run's history, so the operation in hand only needs
#: a moment to end tidily (a transaction in flight is left to the coordinator's timeout); writing
#: on for the 3 x 30 s a commit may retry under faults is what this line exists to prevent.
LOST_GRACE_S = 5.0
#: Exit status of a child that had to be ended hard (not a group leader, so no SIGKILL to itself).
LOST_EXIT = 75

#: This process's pipe: (pid that made it, read end, write end). Re-made after a fork, whose copy
#: of the write end would otherwise keep the parent's line open.
_pipe: tuple[int, int, int] | None = None
_pipe_lock = threading.Lock()


@dataclass(frozen=True)
class Handoff:
    """What a child that must die with this process is started with: ``env`` entries to add and
    ``pass_fds`` for ``subprocess.Popen``."""

    env: dict[str, str] = field(default_factory=dict)
    pass_fds: tuple[int, ...] = ()


def handoff() -> Handoff:
    """The environment entry and the fd to pass to a child so that it stops when this process dies."""
    global _pipe
    with _pipe_lock:
        if _pipe is None or _pipe[0] != os.getpid():
            read_fd, write_fd = os.pipe()  # both non-inheritable: only pass_fds hands the read end on
            _pipe = (os.getpid(), read_fd, write_fd)
        read_fd = _pipe[1]
    return Handoff({ENV_FD: str(read_fd)}, (read_fd,))


def watch(on_lost: Callable[[], None], grace_s: float = LOST_GRACE_S) -> bool:
    """Start a daemon thread that calls ``on_lost`` when the runner's line closes, then ends this
    process after ``grace_s`` if it is still running. True if this process was given a line (a
    workload started by hand was not, and runs until its own deadline)."""
    raw = os.environ.pop(ENV_FD, "")  # popped: a grandchild (the Spark JVM) must not believe it holds one
    if not raw:
        return False
    try:
        fd = int(raw)
        os.fstat(fd)
    except (ValueError, OSError) as exc:
        log.warning(f"{ENV_FD}={raw!r} names no open file descriptor ({exc}); this process will not notice its runner's death")
        return False
    os.set_inheritable(fd, False)
    threading.Thread(target=_wait_for_eof, args=(fd, on_lost, grace_s), name="lifeline", daemon=True).start()
    return True


def _wait_for_eof(fd: int, on_lost: Callable[[], None], grace_s: float) -> None:
    while True:
        try:
            if not os.read(fd, 1):
                break  # EOF: every write end is closed, the runner is gone
        except InterruptedError:
            continue
        except OSError:
            break  # the line itself broke: as good as gone
    log.warning(f"the runner of pid {os.getpid()} is gone (its lifeline closed): stopping, "
                f"and exiting hard in {grace_s:.0f}s if the operation in hand has not finished")
    on_lost()
    time.sleep(grace_s)
    _exit_hard(grace_s)


def _exit_hard(grace_s: float) -> None:
    """End this process now; as a group leader, end its whole group (a Spark driver's JVM too)."""
    log.warning(f"pid {os.getpid()} still running {grace_s:.0f}s after its runner died: exiting hard")
    for handler in logging.getLogger().handlers:
        handler.flush()
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(LOST_EXIT)
