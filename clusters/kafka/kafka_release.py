"""A Kafka release: its version checked, its jars and runtime dependencies fetched from Maven Central
into the cache (the broker's, and Kafka's tools in a folder of their own)."""

from __future__ import annotations

import re
from pathlib import Path

from clusters.builds import maven, pins
from harness.base.errors import ConfigError
from harness.base.paths import cache_dir

_VERSION_RE = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


def parse_kafka_version(version: str, flag: str = "--kafka-version") -> tuple[int, int, int]:
    """Validate a ``--kafka-version`` value (or one of ``flag``'s); raise ``ConfigError`` naming
    the flag and what is allowed."""
    m = _VERSION_RE.match(version.strip())
    if not m:
        raise ConfigError(
            f"{flag} {version!r} is not a release version; expected MAJOR.MINOR.PATCH, "
            f"for example {pins.KAFKA_VERSION}"
        )
    parsed = (int(m[1]), int(m[2]), int(m[3]))
    if parsed < pins.MIN_KAFKA_VERSION:
        low = ".".join(map(str, pins.MIN_KAFKA_VERSION))
        raise ConfigError(
            f"{flag} {version} is older than {low}: the harness needs KRaft with advertised "
            f"controller listeners (KIP-853). Use {low} or newer (default {pins.KAFKA_VERSION}); what older "
            "releases would take: docs/MATRIX.md, Older Kafka releases."
        )
    return parsed


def kafka_dir(version: str) -> Path:
    return cache_dir() / "kafka" / version


def _kafka_pom(version: str, artifact: str = f"kafka_{pins.SCALA_BINARY}") -> str:
    excl = "".join(
        f"<exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>"
        for g, a in (e.split(":") for e in pins.KAFKA_EXCLUDES)
    )
    deps = [
        f"<dependency><groupId>org.apache.kafka</groupId><artifactId>{artifact}</artifactId>"
        f"<version>{version}</version><exclusions>{excl}</exclusions></dependency>",
        f"<dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId>"
        f"<version>{pins.LOG4J_VERSION}</version></dependency>",
        f"<dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId>"
        f"<version>{pins.LOG4J_VERSION}</version></dependency>",
        # Kafka's POMs still say slf4j-api 1.7; the log4j2 binding and Kafka itself need 2.x.
        f"<dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId>"
        f"<version>{pins.SLF4J_VERSION}</version></dependency>",
    ]
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>eos-chaos</groupId><artifactId>kafka-runtime</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{''.join(deps)}</dependencies></project>\n"
    )


def kafka_ready(version: str) -> Path | None:
    """The cached jar folder of ``version`` if a complete fetch of the current pins is there."""
    d = kafka_dir(version)
    marker = d / ".complete"
    if marker.is_file() and marker.read_text().strip() == maven.fingerprint(_kafka_pom(version)):
        return d / "libs"
    return None


def kafka_tools_dir(version: str = pins.KAFKA_TOOLS_VERSION) -> Path:
    return cache_dir() / "kafka-tools" / version


def kafka_tools_ready(version: str = pins.KAFKA_TOOLS_VERSION) -> Path | None:
    """The cached jar folder of Kafka's tools if a complete fetch is there (no lock, no fetch)."""
    return maven.ready(_kafka_pom(version, "kafka-tools"), kafka_tools_dir(version))


def fetch_kafka_tools(version: str = pins.KAFKA_TOOLS_VERSION) -> Path:
    """Kafka's tools jar (ProducerPerformance, TransactionalMessageCopier) and its dependencies, in a
    folder of their own."""
    return fetch_kafka(version, artifact="kafka-tools", d=kafka_tools_dir(version))


def fetch_kafka(version: str, artifact: str = f"kafka_{pins.SCALA_BINARY}", d: Path | None = None,
                flag: str = "--kafka-version") -> Path:
    """Collect ``kafka_2.13:version`` and its runtime dependencies into the cache; return the libs
    folder. A release Maven Central lacks is a ``ConfigError`` naming ``flag``."""
    parse_kafka_version(version, flag)
    coords = f"org.apache.kafka:{artifact}:jar:{version}"

    def missing(out: str) -> ConfigError | None:
        # Maven says "Could not find artifact X" or, once the miss is cached, "X was not found".
        if f"Could not find artifact {coords}" in out or f"{coords} was not found" in out:
            return ConfigError(f"{flag} {version}: org.apache.kafka:{artifact}:{version} is not on "
                               f"Maven Central. Use a released version (default {pins.KAFKA_VERSION}).")
        return None

    return maven.fetch(f"{artifact} {version}", _kafka_pom(version, artifact), d or kafka_dir(version), missing)
