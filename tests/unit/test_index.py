"""Many runs at once: ``results/index.html`` lists every run (a broken one as such) with relative
links that resolve inside the folder, ``results/latest`` follows the run that finished last and is
never missing while it moves, ``eos-chaos index`` is a clear exit 2 on a folder that is not there,
and a session page lists exactly the runs it is given — all on hand-written run folders."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.campaigns.matrix import MATRIX_HTML
from harness.report import write_report
from harness.report.index_page import GROUP_PAGES, after_run, write_index
from harness.report.session_page import write_session_page
from harness.rundir.runfolder import INDEX, LATEST, RunFolder, point_latest
from tests.browser import render
from tests.unit.test_report import make_run, text


def started(run_dir: Path, at: str, **more: object) -> None:
    """Say in the run's journal that it started ``at`` (runs made in a test start in the same second)."""
    journal = json.loads((run_dir / "journal.json").read_text())
    (run_dir / "journal.json").write_text(json.dumps({**journal, "started": at, **more}))


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results folder as many runs leave it: a valid and an invalid run (with reports), a run
    killed before its verdict, one with a broken journal, a cluster's folder and a soak's."""
    root = tmp_path_factory.mktemp("results")
    for variant, name in (("", "20261101-100000-valid-aaaa"), ("duplicate", "20261101-110000-invalid-bbbb")):
        write_report(make_run(root, variant, name))
        started(root / name, "2026-11-01T" + name[9:11] + ":00:00+0000")
    crashed = root / "20261101-120000-crashed-cccc"
    shutil.copytree(root / "20261101-100000-valid-aaaa", crashed,
                    ignore=shutil.ignore_patterns("verdict.json", "report.html"))
    started(crashed, "2026-11-01T12:00:00+0000", finished=None)
    broken = root / "20261101-130000-broken-dddd"
    broken.mkdir()
    (broken / "journal.json").write_text('{"scenario": ')  # cut off mid-write by a full disk
    (root / "20261101-090000-cluster-eeee" / "nodes").mkdir(parents=True)  # a cluster's folder: not a run
    (root / "20261101-080000-soak-ffff").mkdir()
    (root / "20261101-080000-soak-ffff" / "soak.html").write_text("<html></html>")
    return root


RUNS = ["20261101-130000-broken-dddd", "20261101-120000-crashed-cccc", "20261101-110000-invalid-bbbb",
        "20261101-100000-valid-aaaa"]


def rows(page: str) -> list[str]:
    """The runs table's rows as the words a person reads."""
    table = page[page.index('<table class="runs">'):]
    return [text(r) for r in table[:table.index("</table>")].split("<tr")[2:]]


def hrefs(page: str) -> list[str]:
    return re.findall(r'href="([^"]+)"', page)


def test_the_index_lists_every_run_newest_first_and_says_what_is_broken(results: Path) -> None:
    page = write_index(results).read_text()
    found = rows(page)
    assert [next(n for n in RUNS if n in r) for r in found] == RUNS, found  # the cluster's folder is no run
    broken, crashed, invalid, valid = found
    assert "NO VERDICT" in broken and "journal.json" in broken and "not valid JSON" in broken
    assert "NO VERDICT" in crashed and "crashed, was killed, or is still going" in crashed
    assert "INVALID (not as expected)" in invalid and "duplicate: 1" in invalid
    assert "VALID (as expected)" in valid
    for r in (invalid, valid):
        assert " 7 " in r and " local " in r and " 4.1.1 " in r and " 10 " in r  # seed, backend, Kafka, duration
    words = text(page)
    assert "1 NOT AS EXPECTED" in words
    assert "eos-chaos run 20261101-110000-invalid-bbbb --backend local --seed 7" in words  # its replay
    assert "20261101-080000-soak-ffff/soak.html" in words


def test_every_link_is_relative_and_resolves_inside_the_results_folder(results: Path) -> None:
    page = write_index(results).read_text()
    links = hrefs(page)
    reports = [h for h in links if h.endswith("report.html")]
    assert sorted(reports) == sorted(f"{n}/report.html" for n in RUNS[2:])  # only runs that have one
    assert {f"{n}/" for n in RUNS} <= set(links)  # every run's folder, broken ones too
    for h in links:
        assert not re.match(r"[a-z]+:|/", h), h
        target = (results / h).resolve()
        assert target.is_relative_to(results.resolve()) and target.exists(), h
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page) and "@import" not in page


def test_latest_follows_the_run_that_finished_last_and_the_index_is_rewritten(results: Path, tmp_path: Path) -> None:
    elsewhere = make_run(tmp_path, name="outside")
    after_run(elsewhere, results)  # written with --out outside the results folder: leaves them alone
    assert not (results / LATEST).is_symlink()
    (results / INDEX).unlink(missing_ok=True)
    for name in ("20261101-100000-valid-aaaa", "20261101-110000-invalid-bbbb"):
        after_run(results / name, results)
        assert os.readlink(results / LATEST) == name  # relative: the folder can be moved or copied
        assert (results / LATEST / "verdict.json").exists()
    assert "20261101-110000-invalid-bbbb" in (results / INDEX).read_text()
    assert "latest" not in " ".join(rows((results / INDEX).read_text()))  # the link is no second row
    assert sorted(p.name for p in results.iterdir() if p.name.startswith(".")) == []  # no temp link left


def test_latest_is_never_missing_while_it_moves(tmp_path: Path) -> None:
    a, b = tmp_path / "run-a", tmp_path / "run-b"
    a.mkdir(), b.mkdir()
    point_latest(tmp_path, a)
    missing: list[int] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            if not os.path.lexists(tmp_path / LATEST):
                missing.append(1)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(60):  # each swap waits on the reader for the GIL: ~20 ms
            point_latest(tmp_path, b if i % 2 else a)
    finally:
        stop.set()
        reader.join()
    assert missing == [] and os.readlink(tmp_path / LATEST) == "run-b"


def test_a_failure_to_write_the_index_is_logged_never_raised(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    run = make_run(tmp_path, name="run-1")
    (tmp_path / INDEX).mkdir()  # something in the way
    (tmp_path / LATEST).mkdir()
    with caplog.at_level(logging.WARNING):
        after_run(run, tmp_path)
    assert f"{tmp_path / INDEX} could not be written" in caplog.text and "eos-chaos index" in caplog.text
    assert f"{tmp_path / LATEST} could not be pointed at run-1" in caplog.text


def test_the_index_of_hundreds_of_runs_reads_only_their_small_files(results: Path, tmp_path: Path) -> None:
    for i in range(300):
        d = tmp_path / f"20261102-{i:06d}-many-{i:04x}"
        d.mkdir()
        for f in ("scenario.json", "journal.json", "verdict.json"):
            shutil.copy(results / "20261101-110000-invalid-bbbb" / f, d / f)
    started = time.perf_counter()
    page = write_index(tmp_path).read_text()
    assert time.perf_counter() - started < 5.0  # ~0.3 s here; the Parquet history is never opened
    assert len(rows(page)) == 300


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, timeout=120)


def test_the_index_command(results: Path, tmp_path: Path) -> None:
    (results / INDEX).unlink(missing_ok=True)
    done = cli("index", str(results))
    assert done.returncode == 0 and (results / INDEX).exists(), done.stderr
    for bad, says in ((tmp_path / "nope", f"results folder {tmp_path / 'nope'} does not exist"),
                      (results / "20261101-100000-valid-aaaa" / "verdict.json", "is a file, not a results folder")):
        done = cli("index", str(bad))
        assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_the_session_page_lists_exactly_the_runs_it_is_given(results: Path, tmp_path: Path) -> None:
    given = [results / "20261101-110000-invalid-bbbb", results / "20261101-100000-valid-aaaa", tmp_path / "gone"]
    out = write_session_page(tmp_path / "pages" / "session.html", given, "pytest session 1")
    page = out.read_text()
    found = rows(page)
    assert len(found) == 3 and [r.split()[-2] for r in found] == [d.name for d in given], found
    assert "INVALID" in found[0] and "VALID (as expected)" in found[1] and "not there" in found[2]
    assert "pytest session 1" in text(page) and "3 runs of this pytest session" in text(page)
    for h in hrefs(page):
        if (out.parent / h).resolve() != (tmp_path / "gone"):
            assert (out.parent / h).resolve().exists(), h


def test_the_group_pages_are_the_ones_soaks_and_matrices_write() -> None:
    assert GROUP_PAGES == (RunFolder(Path()).soak_html.name, MATRIX_HTML)


def test_the_index_renders_in_chromium_fetches_nothing_and_links_every_run(results: Path) -> None:
    shown = render(write_index(results))
    assert shown.requests == []
    for name in RUNS:
        assert f'href="{name}/"' in shown.dom, name
    assert shown.dom.count('/report.html"') == 2 and "NOT AS EXPECTED" in shown.dom
