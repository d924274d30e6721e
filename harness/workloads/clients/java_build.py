"""The Java client bridge (``harness/jvm/src``), built once per ``kafka-clients`` version: Maven
fetches that release with the bridge's JSON library and log backend into the cache, and ``javac``
compiles the bridge against exactly those jars (3.9 and 4.x differ in their API). Both are cached
behind marker files written last: the libraries by their POM, the classes by the version and a hash
of the sources, so an edit of the bridge rebuilds it and a warm check only stats a few files.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from clusters import artifacts, pins
from harness.base.errors import ConfigError, EnvironmentProblem
from harness.base.paths import REPO_ROOT, cache_dir

log = logging.getLogger(__name__)

#: The bridge's Java sources.
SOURCES = REPO_ROOT / "harness" / "jvm" / "src"
MAIN_CLASS = "eoschaos.Bridge"
#: javac of two small files: seconds; generous for a loaded machine.
COMPILE_TIMEOUT_S = 300
GROUP = "org.apache.kafka"
ARTIFACT = "kafka-clients"


@dataclass(frozen=True)
class Build:
    """A ready bridge: the ``java`` to run it with and its class path."""

    version: str
    java: Path
    classes: Path
    libs: Path

    @property
    def classpath(self) -> str:
        return os.pathsep.join([str(self.classes), str(self.libs / "*")])


def version_dir(version: str) -> Path:
    return cache_dir() / "java-client" / version


def pom(version: str) -> str:
    """kafka-clients ``version``, jackson-databind and slf4j 2 with its simple (stderr) backend."""
    deps = [(GROUP, ARTIFACT, version), ("com.fasterxml.jackson.core", "jackson-databind", pins.JACKSON_VERSION),
            ("org.slf4j", "slf4j-api", pins.SLF4J_VERSION), ("org.slf4j", "slf4j-simple", pins.SLF4J_VERSION)]
    xml = "".join(f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
                  for g, a, v in deps)
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            f"<groupId>eos-chaos</groupId><artifactId>java-client</artifactId><version>1</version>"
            f"<packaging>pom</packaging><dependencies>{xml}</dependencies></project>\n")


def source_hash() -> str:
    """A hash of every bridge source file (names and contents)."""
    h = hashlib.sha256()
    for f in sorted(SOURCES.rglob("*.java")):
        h.update(str(f.relative_to(SOURCES)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def classes_dir(version: str) -> Path:
    return version_dir(version) / f"classes-{source_hash()}"


def ready(version: str) -> Build | None:
    """The build of ``version`` if the libraries and the classes of the current sources are cached."""
    libs = artifacts.maven_ready(pom(version), version_dir(version))
    classes = classes_dir(version)
    if libs is None or not (classes / ".complete").is_file():
        return None
    java, _ = artifacts.find_java()
    return Build(version, java, classes, libs)


def ensure(version: str) -> Build:
    """The bridge for kafka-clients ``version``, fetched and compiled if missing. ``ConfigError``
    when Maven Central has no such release (naming the versions known here)."""
    java, _ = artifacts.find_java()
    with artifacts.cache_lock():
        built = ready(version)
        if built is not None:
            return built
        libs = artifacts.maven_fetch(f"kafka-clients {version}", pom(version), version_dir(version),
                                     missing=lambda out: _missing(version, out))
        classes = classes_dir(version)
        if not (classes / ".complete").is_file():
            _compile(java, libs, classes, version)
    return Build(version, java, classes, libs)


def _missing(version: str, out: str) -> ConfigError | None:
    coords = f"{GROUP}:{ARTIFACT}:jar:{version}"
    if f"Could not find artifact {coords}" not in out and f"{coords} was not found" not in out:
        return None
    known = known_versions()
    near = [v for v in known if v.split(".")[:2] == version.split(".")[:2]] or known
    hint = f"; versions known here: {', '.join(near)}" if near else ""
    return ConfigError(f"library java@{version}: {GROUP}:{ARTIFACT}:{version} is not on Maven Central{hint} "
                       f"(the set-up builds {pins.JAVA_CLIENT_3X_VERSION} and the default, java = java@{_default()})")


def _default() -> str:
    from harness.workloads.clients import DEFAULT_JAVA_VERSION

    return DEFAULT_JAVA_VERSION


def known_versions() -> list[str]:
    """The kafka-clients releases this machine has seen (Maven's local repository): cheap to tell,
    never a question to a registry."""
    d = cache_dir() / "m2" / GROUP.replace(".", "/") / ARTIFACT
    found = [p.name for p in d.glob("*") if (p / f"{ARTIFACT}-{p.name}.jar").is_file()] if d.is_dir() else []
    return sorted(found, key=lambda v: tuple(int(x) if x.isdigit() else 0 for x in re.split(r"[.-]", v)))


def _javac(java: Path) -> str:
    beside = java.resolve().parent / "javac"
    if beside.is_file():
        return str(beside)
    found = shutil.which("javac")
    if not found:
        raise EnvironmentProblem(f"`javac` not found (next to {java} or on PATH); the Java client bridge is compiled "
                                 f"with it. Install a JDK {pins.MIN_JAVA_MAJOR}+ (Debian: apt-get install openjdk-17-jdk-headless)")
    return found


def _compile(java: Path, libs: Path, classes: Path, version: str) -> None:
    """javac the bridge against ``libs`` into ``classes`` (a temporary folder renamed when complete)."""
    sources = sorted(str(p) for p in SOURCES.rglob("*.java"))
    classes.parent.mkdir(parents=True, exist_ok=True)
    for old in classes.parent.glob("classes-*"):
        if old != classes:
            shutil.rmtree(old, ignore_errors=True)  # built from sources that changed since
    with tempfile.TemporaryDirectory(dir=classes.parent) as tmp:
        cmd = [_javac(java), "--release", str(pins.MIN_JAVA_MAJOR), "-nowarn", "-encoding", "UTF-8",
               "-cp", str(libs / "*"), "-d", tmp, *sources]
        log.info(f"java client bridge: compiling against kafka-clients {version}")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise EnvironmentProblem(f"javac of the Java client bridge did not finish within {COMPILE_TIMEOUT_S}s") from exc
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
            raise EnvironmentProblem(f"compiling the Java client bridge against kafka-clients {version} failed:\n{tail}")
        (Path(tmp) / ".complete").write_text(source_hash() + "\n")
        shutil.rmtree(classes, ignore_errors=True)
        Path(tmp).rename(classes)
        Path(tmp).mkdir()  # for TemporaryDirectory's clean-up
    log.info(f"java client bridge: built {classes}")
