"""``make screenshots``: the docs' pictures of a report (a valid run, an invalid run, a Spark
run) taken in headless Chromium from run folders built here out of hand-written histories, so no
cluster is needed. Debian's Chromium through Playwright, as tests/browser.py drives it: no browser
is downloaded, and all traffic goes to a local proxy that answers nothing.

    .venv/bin/python -m tests.screenshots [OUT_DIR]     # default docs/img/
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from harness.base.paths import REPO_ROOT
from harness.history.builder import History
from harness.history.model import FAIL, READ_UNCOMMITTED, SPARK_BATCH, SPARK_FAULT, SPARK_SKIP, SPARK_START, marker_value, spark_value, tp_key
from harness.report import write_report
from harness.rundir.runfolder import RunFolder
from tests.browser import BROWSER_TIMEOUT_S, RecordingProxy, ensure_chromium
from tests.unit.test_report import make_run

#: What the pictures show: the top of the report (verdict, checks, the timeline) at a laptop's width.
VIEWPORT = {"width": 1280, "height": 1500}
SECOND = 1_000_000_000
QUERY, PROC = "spark-job-0", "spark-job-0"


def spark_ops(seconds: int = 40, kill_at: int = 16, restart_after: int = 4) -> list[dict[str, Any]]:
    """A Spark job copying topic ``in`` (2 partitions, a transaction every half second, one in five
    aborted) to ``out`` with the transactional sink, a batch every 2 s, its driver killed right after
    committing a batch and restarted, skipping that batch's replay: a correct run."""
    h = History()
    h.init("prod.0", "tx-in")
    end = {0: 0, 1: 0}  # each partition's log end
    log: dict[int, list[tuple[int, str, bool]]] = {0: [], 1: []}  # offset, value, committed
    out: dict[int, list[tuple[int, str]]] = {0: [], 1: []}
    markers: list[tuple[int, str]] = []
    read_to = {0: 0, 1: 0}
    batch, incarnation, down_until = 0, 0, -1.0
    fault = {"kind": "kill-driver", "workload": PROC, "window": "after-commit"}
    h.t = SECOND
    h._add(process=f"{PROC}.0", type="info", f=SPARK_START, value={"query": QUERY, "incarnation": 0})
    for tick in range(2 * seconds):
        now = tick / 2
        h.t = int((1 + now) * SECOND)
        committed = tick % 5 != 4
        sends = [("in", p, f"v{tick}-{p}-{k}", end[p] + k if committed else None) for p in (0, 1) for k in (0, 1)]
        h.txn("prod.0", sends, outcome="ok" if committed else FAIL)
        for p in (0, 1):
            log[p] += [(end[p] + k, f"v{tick}-{p}-{k}", committed) for k in (0, 1)]
            end[p] += 3  # two values and the transaction's marker
        if tick % 4 != 3 or now < down_until:
            continue
        if now >= down_until > 0:  # the restarted driver: replays the batch the kill cut short, skips it
            down_until = -1.0
            incarnation += 1
            h._add(process=f"{PROC}.{incarnation}", type="info", f=SPARK_START, value={"query": QUERY, "incarnation": incarnation})
            h._add(process=f"{PROC}.{incarnation}", type="info", f=SPARK_SKIP, value={"query": QUERY, "batch": batch - 1, "last_committed": batch - 1})
        proc = f"{PROC}.{incarnation}"
        ranges = {tp_key("in", p): [read_to[p], end[p]] for p in (0, 1)}
        acked: list[tuple[str, int, str, int | None]] = []
        for p in (0, 1):
            for o, v, ok in log[p]:
                if ok and read_to[p] <= o < end[p]:
                    out[p].append((len(out[p]), spark_value("in", p, o, batch, proc, v)))
                    acked.append(("out", p, out[p][-1][1], out[p][-1][0]))
            read_to[p] = end[p]
        markers.append((len(markers), marker_value(QUERY, batch, proc, ranges)))
        h.txn(proc, acked + [("markers", 0, markers[-1][1], markers[-1][0])], txn_id=f"eos-spark-{QUERY}")
        h._add(process=proc, type="info", f=SPARK_BATCH,
               value={"query": QUERY, "batch": batch, "ranges": ranges, "records": len(acked), "outcome": "ok", "ms": 60.0})
        batch += 1
        if now >= kill_at and incarnation == 0:
            h._add(process=proc, type="info", f=SPARK_FAULT, value={"window": "after-commit", "signal": "kill", "batch": batch - 1})
            h._add(process="nemesis", type="info", f="fault", value={**fault, "phase": "start"})
            down_until = now + restart_after
            h.t += restart_after * SECOND
            h._add(process="nemesis", type="ok", f="fault", value={**fault, "phase": "stop"})
            h.t -= restart_after * SECOND
    h.t = int((2 + seconds) * SECOND)
    final = {tp_key("out", p): out[p] for p in (0, 1)} | {tp_key("markers", 0): markers}
    h.scan(final | {tp_key("in", p): [(o, v) for o, v, ok in log[p] if ok] for p in (0, 1)})
    h.scan(final | {tp_key("in", p): [(o, v) for o, v, _ in log[p]] for p in (0, 1)}, isolation=READ_UNCOMMITTED)
    return sorted(h.ops, key=lambda op: int(op["time"]))


def spark_run(root: Path) -> Path:
    """A run folder of ``spark_ops``: a run folder as make_run builds it, its history swapped for the
    Spark job's and checked again (verdict and report made from the new history)."""
    from harness.run import runner

    run_dir = make_run(root, name="spark-driver-kill")
    scenario = RunFolder(run_dir).scenario
    scenario.write_bytes(orjson.dumps({**orjson.loads(scenario.read_bytes()), "description": (
        "A Spark job copies a topic exactly-once (transactional sink); its driver is killed right after a "
        "commit and restarted (hand-written history).")}))
    (run_dir / "history" / "runner.jsonl").write_bytes(b"".join(orjson.dumps(op) + b"\n" for op in spark_ops()))
    shutil.rmtree(RunFolder(run_dir).history_parquet)  # rebuilt from the new lines
    runner.rerun_check(run_dir)
    return run_dir


def shoot(pages: dict[str, Path], out_dir: Path) -> list[Path]:
    """A PNG of the top of each page, ``out_dir/<name>.png``; nothing fetched from anywhere."""
    from playwright.sync_api import sync_playwright

    out_dir.mkdir(parents=True, exist_ok=True)
    proxy = RecordingProxy()
    shots = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=ensure_chromium(), args=["--no-sandbox", "--disable-gpu"],
                                         proxy={"server": f"http://127.0.0.1:{proxy.port}", "bypass": "<-loopback>"},
                                         timeout=BROWSER_TIMEOUT_S * 1000)
            try:
                tab = browser.new_page(viewport=VIEWPORT)  # type: ignore[arg-type]
                for name, page in pages.items():
                    url = page.resolve().as_uri()
                    tab.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())
                    tab.goto(url, wait_until="load", timeout=BROWSER_TIMEOUT_S * 1000)
                    shots.append(out_dir / f"{name}.png")
                    tab.screenshot(path=str(shots[-1]))
            finally:
                browser.close()
    finally:
        proxy.close()
    return shots


def main(out_dir: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="eos-chaos-screenshots-") as tmp:
        root = Path(tmp)
        runs = {"report-valid": make_run(root, "", "txn-baseline"), "report-invalid": make_run(root, "duplicate", "duplicate-control"),
                "report-spark": spark_run(root)}
        pages = {name: write_report(d) for name, d in runs.items()}
        for shot in shoot(pages, out_dir):
            print(f"{shot} ({shot.stat().st_size / 1e3:,.0f} kB)")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO_ROOT / "docs" / "img")
