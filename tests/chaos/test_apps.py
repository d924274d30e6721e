"""Apps under test that misbehave, against real Kafka (docs/APPS.md): an app that exits at start or
never becomes ready ends the run before any fault with a clear error naming its log (exit 2 at the
command line), and one that never consumes, writes values no input explains and ignores SIGTERM gets
an invalid verdict saying so (a topic it did not declare included), with nothing left running. The shipped apps' own scenarios (valid, and
their negative controls) are in test_shipped_apps.py; the README's app example runs in
test_docs_examples.py."""

from __future__ import annotations

import json
import random
import textwrap
from pathlib import Path
from typing import Any

import pytest

from clusters.backends import procs
from clusters.backends.backends import Backend
from clusters.backends.protocol import Cluster
from harness.base.errors import WaitTimeout
from harness.pytest_plugin.app_fixture import app_scenario
from harness.run import runner
from harness.run.scenario import Scenario
from harness.rundir.runfolder import new_run_dir
from harness.workloads.app_wrapper import KILLED_AT_STOP

pytestmark = pytest.mark.chaos

ONCE = "an app is a local process on either backend: once is enough (make library runs it on both)"


def _app(tmp_path: Path, script: str, **kw: Any) -> Scenario:
    (tmp_path / "app.py").write_text(textwrap.dedent(script))
    fields = app_scenario("bad-app", ["{python}", "app.py"], ["app-in"], ["app-out"], {"kind": "map"},
                          kw.pop("ready", {"log": "started"}), cwd=tmp_path, **{"duration": 8, "faults": [], **kw})
    return Scenario.model_validate(fields)


def _run(cluster: Cluster, sc: Scenario) -> runner.RunResult:
    if cluster.backend != "local":
        pytest.skip(ONCE)
    return runner.run(sc, Backend(cluster.backend), random.randrange(2**31), new_run_dir("pytest-bad-app"), cluster=cluster)


def _nothing_left(run_dir: Path) -> None:
    left = [t for t in procs.tagged_processes() if str(run_dir) in " ".join(procs.cmdline(t.pid))]
    assert left == [], f"processes of the run left running: {left}"


def test_an_app_that_exits_at_start_ends_the_run_naming_its_exit_its_exception_and_log(cluster: Cluster,
                                                                                      tmp_path: Path) -> None:
    """The exception it died of is named though 50 lines of shutdown come after it in its log (issue
    39: a Streams app's MissingSourceTopicException was hidden behind "Closing reporter" lines), in
    the error (exit 2 at the command line) and in the journal the report reads."""
    sc = _app(tmp_path, """
        import sys, traceback
        print("reading my-app.properties", flush=True)
        try:
            open("my-app.properties")
        except OSError:
            traceback.print_exc()
            sys.stderr.flush()
        for _ in range(50):
            print("INFO Closing reporter org.apache.kafka.common.metrics.JmxReporter", flush=True)
        sys.exit(3)
        """)
    with pytest.raises(WaitTimeout) as e:
        _run(cluster, sc)
    said = str(e.value)
    assert "app-0 exited with 3 before it was ready" in said and "workloads/app-0.log" in said, said
    exception = "FileNotFoundError: [Errno 2] No such file or directory: 'my-app.properties'"
    assert exception in said, said
    log = Path(said.split("(its log: ")[1].split(")")[0])
    assert log.is_file(), said
    assert log.read_text().count("Closing reporter") == 50
    run_dir = log.parents[1]
    digest = json.loads((run_dir / "journal.json").read_text())["app"]["logs"]["app-0"]
    assert digest["exceptions"][0][-1] == exception, digest
    _nothing_left(run_dir)


def test_an_app_never_ready_ends_the_run_at_its_ready_timeout_with_its_log(cluster: Cluster, tmp_path: Path) -> None:
    sc = _app(tmp_path, """
        import time
        print("connecting to a database that is not there", flush=True)
        time.sleep(600)
        """, ready_timeout_s=4)
    with pytest.raises(WaitTimeout) as e:
        _run(cluster, sc)
    said = str(e.value)
    assert "timed out after 4s" in said and "app-0 has finished no app-ready yet" in said, said
    assert "connecting to a database that is not there" in said  # the last lines of its log


def test_an_app_that_never_consumes_and_writes_what_no_input_explains_or_elsewhere_is_invalid(cluster: Cluster, tmp_path: Path) -> None:
    sc = _app(tmp_path, """
        import os, signal, time
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient, NewTopic
        signal.signal(signal.SIGTERM, signal.SIG_IGN)   # and it hangs on SIGTERM
        bootstrap = os.environ["EOS_CHAOS_APP_BOOTSTRAP"]
        stray = "audit-" + os.environ["EOS_CHAOS_APP_ID"]  # a topic it does not declare
        admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: its future fails if it is collected first
        admin.create_topics([NewTopic(stray, 1, 3)])[stray].result(60)
        p = Producer({"bootstrap.servers": bootstrap})
        for n in range(5):
            p.produce(os.environ["EOS_CHAOS_APP_OUTPUTS"], key=b"kx", value=f"nobody-wrote-me-{n}".encode())
        p.produce(stray, value=b"audit")
        p.flush(30)
        print("started", flush=True)
        while True:
            time.sleep(1)
        """, stop_timeout_s=2)
    result = _run(cluster, sc)
    v = result.verdict.to_json()
    assert v["valid"] is False, v["checks"]["app-map"]
    kinds = {e["kind"] for e in v["checks"]["app-map"]["examples"]}
    assert {"missing", "unexplained", "undeclared-topic"} <= kinds, v["checks"]["app-map"]
    (stray,) = [e for e in v["checks"]["app-map"]["examples"] if e["kind"] == "undeclared-topic"]
    assert stray["topic"].startswith("audit-eos-chaos-app.") and stray["count"] == 1, stray
    unexplained = [e for e in v["checks"]["app-map"]["examples"] if e["kind"] == "unexplained"]
    assert unexplained[0]["record"]["value"].startswith("nobody-wrote-me-") and unexplained[0]["inputs"] == []
    app = v["run"]["app"]
    assert app["exits"] == {"app-0": KILLED_AT_STOP}, app  # killed after ignoring SIGTERM for stop_timeout_s
    assert app["drain"]["drained"] is True and "committed no offsets" in app["drain"]["how"], app
    _nothing_left(result.run_dir)
