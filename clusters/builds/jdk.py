"""The JDK the brokers, the Java client bridge and the shipped Java apps run with."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from clusters.builds import pins
from harness.base.errors import EnvironmentProblem


def find_java() -> tuple[Path, int]:
    """The Java the brokers run with and its major version; ``EnvironmentProblem`` if unusable."""
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home) / "bin" / "java" if home else None
    java = str(candidate) if candidate and candidate.exists() else shutil.which("java")
    if not java:
        raise EnvironmentProblem(
            f"Java not found (no `java` on PATH, JAVA_HOME={home!r}). Install a JDK {pins.MIN_JAVA_MAJOR}+ "
            "(Debian: apt-get install openjdk-17-jdk-headless) or set JAVA_HOME."
        )
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentProblem(f"could not run {java} -version: {exc}") from exc
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        raise EnvironmentProblem(f"could not read the Java version from `{java} -version`: {out.stderr.strip()!r}")
    major = int(m[1]) if m[1] != "1" else int(m[2] or 0)
    if major < pins.MIN_JAVA_MAJOR:
        raise EnvironmentProblem(
            f"{java} is Java {major}; Kafka 4.x brokers need Java {pins.MIN_JAVA_MAJOR}+. "
            "Install a newer JDK or point JAVA_HOME at one."
        )
    return Path(java), major
