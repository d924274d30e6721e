"""Jars from Maven Central: a POM's runtime dependencies resolved into a folder of the cache, behind a
marker of the POM written last (a half-finished fetch is never taken for a good one)."""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from clusters.builds.cache import FETCH_TIMEOUT_S, require_tool
from harness.base.errors import ConfigError, EnvironmentProblem
from harness.base.paths import cache_dir

log = logging.getLogger(__name__)


def fingerprint(text: str) -> str:
    """The marker a complete fetch of the POM ``text`` leaves."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def route_to_central(repo_ids: tuple[str, ...]) -> str:
    """A Maven settings file that mirrors ``repo_ids`` to Maven Central, at the address Maven's own
    super POM gives for it (so this project names no repository host of its own)."""
    import zipfile

    mvn = Path(require_tool("mvn", "fetch jars from Maven Central", "apt-get install maven")).resolve()
    jars = sorted((mvn.parent.parent / "lib").glob("maven-model-builder-*.jar"))
    if not jars:
        raise EnvironmentProblem(f"cannot find Maven's maven-model-builder jar under {mvn.parent.parent / 'lib'}")
    with zipfile.ZipFile(jars[0]) as z:
        super_pom = z.read("org/apache/maven/model/pom-4.0.0.xml").decode()
    m = re.search(r"<repository>\s*<id>central</id>.*?<url>(.*?)</url>", super_pom, re.S)
    if not m:
        raise EnvironmentProblem(f"{jars[0]} has no central repository in its super POM")
    mirrors = "".join(f"<mirror><id>{r}-via-central</id><mirrorOf>{r}</mirrorOf><url>{m[1]}</url></mirror>"
                      for r in repo_ids)
    return f"<settings><mirrors>{mirrors}</mirrors></settings>\n"


def fetch(what: str, pom: str, d: Path, missing: Callable[[str], ConfigError | None] | None = None,
          settings: str | None = None) -> Path:
    """``d/libs``, where ``pom``'s runtime dependencies are resolved from Maven Central (cached behind a
    marker of the POM; ``missing`` turns Maven's output into the error of an artifact that does not exist,
    ``settings`` is a Maven settings file for the run)."""
    marker = d / ".complete"
    if marker.is_file() and marker.read_text().strip() == fingerprint(pom):
        log.info(f"{what}: cached at {d / 'libs'}")
        return d / "libs"
    mvn = require_tool("mvn", "fetch jars from Maven Central", "apt-get install maven")
    d.mkdir(parents=True, exist_ok=True)
    log.info(f"{what}: resolving it and its runtime dependencies with Maven")
    with tempfile.TemporaryDirectory(dir=d) as tmp:
        (Path(tmp) / "pom.xml").write_text(pom)
        libs_tmp = Path(tmp) / "libs"
        cmd = [
            mvn, "-B", "-q", "-U", "-f", str(Path(tmp) / "pom.xml"),
            f"-Dmaven.repo.local={cache_dir() / 'm2'}",
            "dependency:copy-dependencies", f"-DoutputDirectory={libs_tmp}", "-DincludeScope=runtime",
        ]
        if settings is not None:
            (Path(tmp) / "settings.xml").write_text(settings)
            cmd[1:1] = ["-gs", str(Path(tmp) / "settings.xml")]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise EnvironmentProblem(f"Maven did not finish fetching {what} within {FETCH_TIMEOUT_S}s") from exc
        if proc.returncode != 0:
            out = proc.stdout + proc.stderr
            problem = missing(out) if missing else None
            if problem is not None:
                shutil.rmtree(d, ignore_errors=True)
                raise problem
            tail = "\n".join(out.strip().splitlines()[-15:])
            raise EnvironmentProblem(f"Maven could not fetch {what} (exit {proc.returncode}):\n{tail}")
        libs = d / "libs"
        if libs.exists():
            shutil.rmtree(libs)
        libs_tmp.rename(libs)
    (d / "pom.xml").write_text(pom)
    marker.write_text(fingerprint(pom) + "\n")
    log.info(f"{what}: {len(list(libs.glob('*.jar')))} jars in {libs}")
    return libs


def ready(pom: str, d: Path) -> Path | None:
    """``d/libs`` if a complete ``fetch`` of ``pom`` is there (no locking, no fetching)."""
    marker = d / ".complete"
    return d / "libs" if marker.is_file() and marker.read_text().strip() == fingerprint(pom) else None
