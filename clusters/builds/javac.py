"""Java programs of this repository compiled against libraries Maven fetches: the Java client bridge
(harness/workloads/clients/java_build.py, its sources in java_src/) and the shipped apps
(harness/apps). Maven resolves a POM's runtime dependencies into ``<folder>/libs`` and ``javac`` compiles the sources against exactly
those jars into ``<folder>/classes-<hash of the sources>``. Both are cached behind marker files
written last, so an edit of the sources rebuilds them, a half-finished build is never taken for a
good one, and a warm check only stats a few files.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from clusters.builds import jdk, maven, pins
from clusters.builds.cache import cache_lock
from harness.base.errors import ConfigError, EnvironmentProblem

log = logging.getLogger(__name__)

#: javac of a few small files: seconds; generous for a loaded machine.
COMPILE_TIMEOUT_S = 300
#: the marker written last into a complete classes folder
COMPLETE = ".complete"


@dataclass(frozen=True)
class Build:
    """A ready program: the ``java`` to run it with and its class path."""

    java: Path
    classes: Path
    libs: Path

    @property
    def classpath(self) -> str:
        return os.pathsep.join([str(self.classes), str(self.libs / "*")])


@dataclass(frozen=True)
class Program:
    """What to build: ``sources`` (``*.java`` under it) against ``pom``'s dependencies, into ``folder``."""

    #: for messages: "the Java client bridge"
    what: str
    sources: Path
    pom: str
    folder: Path
    #: what the libraries are, for messages: "kafka-clients 4.4.0"
    libraries: str
    #: Maven's output -> the ConfigError of an artifact that does not exist (None: another failure)
    missing: Callable[[str], ConfigError | None] | None = field(default=None, compare=False)


def pom(artifact: str, deps: Sequence[tuple[str, str, str]]) -> str:
    """A POM of its own dependencies only: ``deps`` as (group, artifact, version)."""
    xml = "".join(f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
                  for g, a, v in deps)
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            f"<groupId>eos-chaos</groupId><artifactId>{artifact}</artifactId><version>1</version>"
            f"<packaging>pom</packaging><dependencies>{xml}</dependencies></project>\n")


def source_files(sources: Path) -> list[Path]:
    return sorted(sources.rglob("*.java"))


def source_hash(sources: Path) -> str:
    """A hash of every source file under ``sources`` (names and contents)."""
    h = hashlib.sha256()
    for f in source_files(sources):
        h.update(str(f.relative_to(sources)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def classes_dir(program: Program) -> Path:
    return program.folder / f"classes-{source_hash(program.sources)}"


def ready(program: Program) -> Build | None:
    """The build if the libraries and the classes of the current sources are cached (no lock, no fetch)."""
    libs = maven.ready(program.pom, program.folder)
    classes = classes_dir(program)
    if libs is None or not (classes / COMPLETE).is_file():
        return None
    java, _ = jdk.find_java()
    return Build(java, classes, libs)


def ensure(program: Program) -> Build:
    """The build, fetched and compiled if missing (under the cache's set-up lock)."""
    java, _ = jdk.find_java()
    with cache_lock():
        built = ready(program)
        if built is not None:
            return built
        libs = maven.fetch(program.libraries, program.pom, program.folder, missing=program.missing)
        classes = classes_dir(program)
        if not (classes / COMPLETE).is_file():
            _compile(program, java, libs, classes)
    return Build(java, classes, libs)


def javac(java: Path, what: str) -> str:
    """The ``javac`` beside ``java`` (the same JDK), else the one on PATH."""
    beside = java.resolve().parent / "javac"
    if beside.is_file():
        return str(beside)
    found = shutil.which("javac")
    if not found:
        raise EnvironmentProblem(f"`javac` not found (next to {java} or on PATH); {what} is compiled with it. "
                                 f"Install a JDK {pins.MIN_JAVA_MAJOR}+ (Debian: apt-get install openjdk-17-jdk-headless)")
    return found


def _compile(program: Program, java: Path, libs: Path, classes: Path) -> None:
    """javac ``program`` against ``libs`` into ``classes`` (a temporary folder renamed when complete)."""
    sources = [str(p) for p in source_files(program.sources)]
    if not sources:
        raise EnvironmentProblem(f"{program.what}: no *.java under {program.sources}")
    classes.parent.mkdir(parents=True, exist_ok=True)
    for old in classes.parent.glob("classes-*"):
        if old != classes:
            shutil.rmtree(old, ignore_errors=True)  # built from sources that changed since
    with tempfile.TemporaryDirectory(dir=classes.parent) as tmp:
        cmd = [javac(java, program.what), "--release", str(pins.MIN_JAVA_MAJOR), "-nowarn", "-encoding", "UTF-8",
               "-cp", str(libs / "*"), "-d", tmp, *sources]
        log.info(f"{program.what}: compiling against {program.libraries}")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise EnvironmentProblem(f"javac of {program.what} did not finish within {COMPILE_TIMEOUT_S}s") from exc
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
            raise EnvironmentProblem(f"compiling {program.what} against {program.libraries} failed:\n{tail}")
        (Path(tmp) / COMPLETE).write_text(source_hash(program.sources) + "\n")
        shutil.rmtree(classes, ignore_errors=True)
        Path(tmp).rename(classes)
        Path(tmp).mkdir()  # for TemporaryDirectory's clean-up
    log.info(f"{program.what}: built {classes}")
