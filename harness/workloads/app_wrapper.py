"""app: one instance of a user's application under test (docs/APPS.md), wrapped. The wrapper fills
the placeholders of the app's command, working folder and environment for this instance, starts the
command in its own process group (the workload faults' SIGKILL and SIGSTOP reach the app with it),
copies its output to this process's log, records each start of the command (``app-start``), watches
its readiness after each start (a log line, its consumer group Stable, or a first output record) and
records it (``app-ready``), and records every exit of the command (``app-exit``). An app that exits after it was ready is started again (an orchestrator
would): whenever it exits 0 (it finished what it was given: Kafka's TransactionalMessageCopier
copies the backlog it found and stops), and up to ``MAX_RESTARTS`` times after a failure; one that exits before it was ready ends the wrapper with the
app's exit code, which the run reports naming the app's log. On SIGTERM (the run's end) the app
gets SIGTERM and ``stop_timeout_s`` to exit, then SIGKILL; the wrapper's exit code says which
(0, or ``KILLED_AT_STOP``).

Settings: ``registry.AppSettings``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from confluent_kafka import ConsumerGroupState, TopicPartition
from confluent_kafka.admin import AdminClient

from clusters.kafka.health import QUIET, admin_client
from harness.history.model import APP_EXIT, APP_READY, APP_START
from harness.history.recorder import Recorder
from harness.workloads import app_args
from harness.workloads.common import StopFlag, WorkloadConfig
from harness.workloads.registry import AppSettings

#: An app that keeps failing after it was ready is not restarted for ever (exits 0 are not counted).
MAX_RESTARTS = 20
#: Between an app's exit and its restart (a crash loop must not spin the machine).
RESTART_PAUSE_S = 1.0
#: How often the group or the output is asked about (readiness ``group`` / ``output``).
PROBE_INTERVAL_S = 0.5
#: A metadata or group question to the cluster: one round trip; generous for a loaded machine.
PROBE_TIMEOUT_S = 10.0
#: The wrapper's exit code when the app ignored SIGTERM for ``stop_timeout_s`` and was killed.
KILLED_AT_STOP = 75


def place_of(cfg: WorkloadConfig, s: AppSettings) -> app_args.Place:
    """What this instance is told (``cfg.name`` is ``<app>-<instance>``)."""
    to_scenario = {run: name for name, run in cfg.topic_names.items()}
    # absolute: the app runs in its own cwd (the scenario's folder), where a run folder given as a
    # relative path (`matrix --out results/x`) would put its state beside the scenario files
    workdir = Path(cfg.run_dir).absolute() / "workloads" / cfg.name
    return app_args.Place(bootstrap=cfg.bootstrap, topics=dict(cfg.topic_names),
                          inputs=tuple(to_scenario.get(t, t) for t in s.inputs),
                          outputs=tuple(to_scenario.get(t, t) for t in s.outputs),
                          instance=int(cfg.name.rpartition("-")[2]), instances=cfg.instances, id=s.id,
                          workdir=str(workdir), python=sys.executable)


def command_of(s: AppSettings, place: app_args.Place) -> tuple[list[str], str | None, dict[str, str]]:
    """The app's argv, working folder and environment for ``place`` (placeholders filled)."""
    argv = [app_args.expand(a, place) for a in s.command]
    cwd = app_args.expand(s.cwd, place) if s.cwd else None
    env = {**os.environ, **app_args.environment(place), **{k: app_args.expand(v, place) for k, v in s.env.items()}}
    return argv, cwd, env


class AppReadiness:
    """Whether the app is ready, by its settings' one condition."""

    def __init__(self, cfg: WorkloadConfig, s: AppSettings) -> None:
        self.cfg, self.s = cfg, s
        self.pattern = re.compile(s.ready.log) if s.ready.log is not None else None
        self.ready = threading.Event()
        self.how = ""
        self._admin: AdminClient | None = None
        #: the output's ends when this start was first probed (``output``: new records after them)
        self._since: dict[tuple[str, int], int] | None = None

    def line(self, text: str) -> None:
        """A line of the app's output (the ``log`` condition)."""
        if self.pattern is not None and not self.ready.is_set() and self.pattern.search(text):
            self._set(f"log line matched {self.s.ready.log!r}: {text.strip()[:200]}")

    def probe(self) -> None:
        """Ask the cluster (the ``group`` and ``output`` conditions); never raises."""
        if self.pattern is not None or self.ready.is_set():
            return
        try:
            if self._admin is None:
                self._admin = admin_client(self.cfg.bootstrap)
            if self.s.ready.group is not None:
                group = self.s.id if self.s.ready.group in ("stable", "{id}") else self.s.ready.group
                desc = self._admin.describe_consumer_groups([group], request_timeout=PROBE_TIMEOUT_S)[group].result(
                    timeout=PROBE_TIMEOUT_S)
                if desc.state == ConsumerGroupState.STABLE and desc.members:
                    self._set(f"consumer group {group} Stable with {len(desc.members)} member(s)")
            elif self._some_output():
                self._set("a first record in an output topic since this start")
        except Exception:  # noqa: BLE001 - a cluster under faults may not answer: asked again next time
            pass

    def _some_output(self) -> bool:
        """A record in an output topic since this start: beyond the ends the first probe after it
        saw. Not merely a record there: after a restart the output holds the earlier incarnation's,
        and a Spark driver restarted by a kill was "ready" 60 ms after its start, a minute before its
        first micro-batch (the drain took it for running and ended before it had written anything)."""
        ends = self.output_ends()
        if self._since is None:
            self._since = ends
            return False
        return any(end > self._since.get(tp, 0) for tp, end in ends.items())

    def output_ends(self) -> dict[tuple[str, int], int]:
        """The end offset of each output partition."""
        from confluent_kafka import Consumer

        c = Consumer({"bootstrap.servers": self.cfg.bootstrap, "group.id": f"eos-chaos-{self.cfg.name}-ready",
                      "logger": QUIET})
        try:
            return {(t, p): c.get_watermark_offsets(TopicPartition(t, p), timeout=PROBE_TIMEOUT_S)[1]
                    for t in self.s.outputs for p in range(self.cfg.partitions_of(t))}
        finally:
            c.close()

    def reset(self) -> None:
        """Not ready: a new start of the app must show it runs again (the drain waits for that), by
        its own output for ``output``."""
        self.ready.clear()
        self.how = ""
        self._since = None

    def _set(self, how: str) -> None:
        self.how = how
        self.ready.set()


def copy_output(stream: IO[bytes], sink: IO[bytes], on_line: Callable[[str], None]) -> None:
    """Copy the app's output to the log line by line, showing each line to ``on_line``."""
    for raw in iter(stream.readline, b""):
        sink.write(raw)
        sink.flush()
        on_line(raw.decode(errors="replace"))


def exit_facts(code: int) -> dict[str, object]:
    """An exit status as the history records it: the code, and the signal's name if one ended it."""
    return {"code": code, "signal": signal.Signals(-code).name if code < 0 else None}


def main() -> None:
    cfg = WorkloadConfig.from_argv()
    s = AppSettings.model_validate(cfg.settings)
    stop = StopFlag(cfg.max_seconds)
    place = place_of(cfg, s)
    Path(place.workdir).mkdir(parents=True, exist_ok=True)
    argv, cwd, env = command_of(s, place)
    readiness = AppReadiness(cfg, s)
    out = sys.stdout.buffer
    with Recorder(Path(cfg.run_dir), cfg.name) as rec:
        process = rec.process(cfg.name)
        restarts, ever_ready = 0, False
        while True:
            print(f"[eos-chaos] starting {cfg.name}: {' '.join(argv)} (cwd {cwd or os.getcwd()})", flush=True)
            try:
                child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
            except OSError as exc:
                print(f"[eos-chaos] {cfg.name} cannot start {argv[0]!r}: {exc}", flush=True)
                rec.event(process, APP_EXIT, {"code": None, "signal": None, "after_ready": False,
                                              "error": f"cannot start: {exc}"})
                sys.exit(2)
            rec.event(process, APP_START, {"pid": child.pid})
            readiness.reset()
            reader = threading.Thread(target=copy_output, args=(child.stdout, out, readiness.line), daemon=True)
            reader.start()
            was_ready = False  # this start's readiness; ever_ready: any start's (an exit before it is fatal)
            while child.poll() is None and not stop:
                readiness.probe()
                if readiness.ready.is_set() and not was_ready:
                    rec.event(process, APP_READY, {"how": readiness.how}, type_="ok")
                    was_ready = ever_ready = True
                try:
                    child.wait(timeout=PROBE_INTERVAL_S)
                except subprocess.TimeoutExpired:
                    pass
            if child.poll() is None:  # stopped: the run is over
                code = stop_child(child, s.stop_timeout_s)
                reader.join(timeout=5)
                killed = code is None
                rec.event(process, APP_EXIT, {**exit_facts(child.wait()), "after_ready": was_ready, "stopped": True,
                                              **({"killed_after_s": s.stop_timeout_s} if killed else {})})
                if killed:
                    print(f"[eos-chaos] {cfg.name} did not exit within {s.stop_timeout_s:g}s of SIGTERM: killed", flush=True)
                sys.exit(KILLED_AT_STOP if killed else 0)
            reader.join(timeout=5)
            code = child.returncode
            rec.event(process, APP_EXIT, {**exit_facts(code), "after_ready": was_ready, "stopped": False})
            print(f"[eos-chaos] {cfg.name} exited with {code}", flush=True)
            if not ever_ready or (code != 0 and restarts >= MAX_RESTARTS):
                sys.exit(code if code > 0 else 1)
            restarts += code != 0
            time.sleep(RESTART_PAUSE_S)  # a crash loop must not spin: a pause, not a wait on anything
            if stop:
                sys.exit(0)


def stop_child(child: subprocess.Popen[bytes], timeout_s: float) -> int | None:
    """SIGTERM the app and wait ``timeout_s``; then SIGKILL it. Its exit code, None if it was killed."""
    child.send_signal(signal.SIGCONT)
    child.terminate()
    try:
        return child.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        return None


if __name__ == "__main__":
    main()
