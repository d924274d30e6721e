"""The Java client bridge (its sources beside this module, ``java_src/``), built once per ``kafka-clients`` version: Maven
fetches that release with the bridge's JSON library and log backend into the cache, and ``javac``
compiles the bridge against exactly those jars (3.9 and 4.x differ in their API). Both are cached
behind marker files written last (``clusters.builds.javac``): the libraries by their POM, the classes
by a hash of the sources, so an edit of the bridge rebuilds it and a warm check only stats a few files.
"""

from __future__ import annotations

import re
from pathlib import Path

from clusters.builds import javac, pins
from clusters.builds.javac import Build
from harness.base.errors import ConfigError
from harness.base.paths import cache_dir

__all__ = ["ARTIFACT", "GROUP", "MAIN_CLASS", "SOURCES", "Build", "classes_dir", "ensure", "known_versions", "pom",
           "ready", "source_hash", "version_dir"]

#: The bridge's Java sources.
SOURCES = Path(__file__).resolve().parent / "java_src"
MAIN_CLASS = "eoschaos.Bridge"
GROUP = "org.apache.kafka"
ARTIFACT = "kafka-clients"


def version_dir(version: str) -> Path:
    return cache_dir() / "java-client" / version


def pom(version: str) -> str:
    """kafka-clients ``version``, jackson-databind and slf4j 2 with its simple (stderr) backend."""
    return javac.pom("java-client", [
        (GROUP, ARTIFACT, version), ("com.fasterxml.jackson.core", "jackson-databind", pins.JACKSON_VERSION),
        ("org.slf4j", "slf4j-api", pins.SLF4J_VERSION), ("org.slf4j", "slf4j-simple", pins.SLF4J_VERSION)])


def program(version: str) -> javac.Program:
    return javac.Program("the Java client bridge", SOURCES, pom(version), version_dir(version),
                             f"kafka-clients {version}", missing=lambda out: _missing(version, out))


def source_hash() -> str:
    """A hash of every bridge source file (names and contents)."""
    return javac.source_hash(SOURCES)


def classes_dir(version: str) -> Path:
    return javac.classes_dir(program(version))


def ready(version: str) -> Build | None:
    """The build of ``version`` if the libraries and the classes of the current sources are cached."""
    return javac.ready(program(version))


def ensure(version: str) -> Build:
    """The bridge for kafka-clients ``version``, fetched and compiled if missing. ``ConfigError``
    when Maven Central has no such release (naming the versions known here)."""
    return javac.ensure(program(version))


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
    return pins.JAVA_CLIENT_VERSION


def known_versions() -> list[str]:
    """The kafka-clients releases this machine has seen (Maven's local repository): cheap to tell,
    never a question to a registry."""
    d = cache_dir() / "m2" / GROUP.replace(".", "/") / ARTIFACT
    found = [p.name for p in d.glob("*") if (p / f"{ARTIFACT}-{p.name}.jar").is_file()] if d.is_dir() else []
    return sorted(found, key=lambda v: tuple(int(x) if x.isdigit() else 0 for x in re.split(r"[.-]", v)))
