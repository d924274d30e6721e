"""A run ends only after each restarted Spark driver finished a micro-batch (``Supervisor.
await_recovered``): real processes stand in for the driver, writing (or not) the progress file the
job writes after each batch. The chaos tests' driver-kill scenarios run it on a real job."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness.run.supervisor import Supervisor
from harness.sparkjob.job import PROGRESS_FILE, job_dir

#: a driver that finishes a batch: the progress file with its own pid (as ``job.mark_progress``)
RECOVERS = ("import json, os, sys, time; time.sleep(0.3); "
            "open(sys.argv[1], 'w').write(json.dumps({'pid': os.getpid(), 'batch': 4})); time.sleep(30)")


def restarted_driver(tmp_path: Path, code: str) -> tuple[Supervisor, subprocess.Popen[bytes]]:
    sup = Supervisor(tmp_path, {})
    progress = job_dir(tmp_path, "spark-job-0") / PROGRESS_FILE
    progress.parent.mkdir(parents=True)
    # the killed incarnation's last batch: a pid that is not the current driver's
    progress.write_text('{"pid": 1, "batch": 3}')
    p = subprocess.Popen([sys.executable, "-c", code, str(progress)])
    sup.procs["spark-job-0"], sup.kinds["spark-job-0"] = p, "spark-job"
    sup.restarted.add("spark-job-0")
    return sup, p


def test_the_run_waits_for_the_restarted_driver_to_finish_a_batch(tmp_path: Path) -> None:
    sup, p = restarted_driver(tmp_path, RECOVERS)
    try:
        assert sup.await_recovered(timeout=60) == []
    finally:
        p.kill()
        p.wait()


def test_a_driver_that_never_finishes_a_batch_is_named_with_its_last_state(tmp_path: Path) -> None:
    sup, p = restarted_driver(tmp_path, "import time; time.sleep(30)")
    try:
        missing = sup.await_recovered(timeout=1)
    finally:
        p.kill()
        p.wait()
    assert len(missing) == 1 and missing[0].startswith("spark-job-0: driver pid"), missing
    assert "alive: True" in missing[0] and "'pid': 1, 'batch': 3" in missing[0], missing
