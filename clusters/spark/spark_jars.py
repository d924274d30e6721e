"""Spark's Kafka connector for the pinned PySpark, fetched with Maven into the cache, with the runtime
dependencies PySpark's own jars lack."""

from __future__ import annotations

import re
from pathlib import Path

from clusters.builds import maven, pins
from clusters.builds.cache import cache_lock
from harness.base.errors import EnvironmentProblem
from harness.base.paths import cache_dir


def spark_kafka_dir() -> Path:
    return cache_dir() / "spark-kafka" / pins.SPARK_VERSION


def _spark_kafka_pom() -> str:
    group, artifact = pins.SPARK_KAFKA_CONNECTOR.split(":")
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>eos-chaos</groupId><artifactId>spark-kafka</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies><dependency><groupId>{group}</groupId>"
        f"<artifactId>{artifact}</artifactId><version>{pins.SPARK_VERSION}</version></dependency>"
        "</dependencies></project>\n"
    )


def spark_kafka_ready() -> list[Path] | None:
    """The connector's jars (those PySpark does not ship already) if a complete fetch is cached."""
    d = spark_kafka_dir()
    marker = d / ".complete"
    if marker.is_file() and marker.read_text().strip() == maven.fingerprint(_spark_kafka_pom()):
        return sorted((d / "libs").glob("*.jar"))
    return None


def fetch_spark_kafka() -> list[Path]:
    """Spark's Kafka connector for the pinned PySpark, with the runtime dependencies PySpark's own
    jars lack; returns the jar paths for ``spark.jars``."""
    libs = maven.fetch(f"spark-sql-kafka {pins.SPARK_VERSION}", _spark_kafka_pom(), spark_kafka_dir(),
                        settings=maven.route_to_central(pins.SPARK_EXTRA_REPOSITORIES))
    shipped = {_artifact_name(p) for p in pyspark_jars()}
    for jar in libs.glob("*.jar"):
        if _artifact_name(jar) in shipped:
            jar.unlink()  # two versions of one library on the classpath: whichever loads first wins
    return sorted(libs.glob("*.jar"))


def pyspark_jars() -> list[Path]:
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise EnvironmentProblem("pyspark is not installed (make setup installs it with the project)")
    return list((Path(spec.origin).parent / "jars").glob("*.jar"))


def _artifact_name(jar: Path) -> str:
    """``kafka-clients-3.9.0.jar`` -> ``kafka-clients`` (the name without its version)."""
    return re.sub(r"-\d[\w.+-]*$", "", jar.stem)


def ensure_spark() -> list[Path]:
    """Spark's Kafka connector jars, fetched if missing (serialised with the other set-ups)."""
    with cache_lock():
        return fetch_spark_kafka()
