"""What a cluster runs, ready in the cache: Kafka's jars (``clusters.kafka.kafka_release``), Toxiproxy
and the wire proxy (each built by its own package), and the Java to run the brokers with."""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass
from pathlib import Path

from clusters.builds import jdk, pins
from clusters.builds.cache import cache_lock
from clusters.kafka import kafka_release
from clusters.toxiproxy import toxiproxy_build
from clusters.wire import kwire_build


@dataclass(frozen=True)
class Artifacts:
    """Paths of a ready set of artifacts."""

    kafka_version: str
    kafka_libs: Path
    toxiproxy_bin: Path
    java: Path
    #: the wire proxy (clusters/wire/kwire/), built from the repository's own Go source
    kwire_bin: Path | None = None


def ensure(kafka_version: str = pins.KAFKA_VERSION, flag: str = "--kafka-version") -> Artifacts:
    """Everything a local cluster needs, fetched if missing (Kafka, Toxiproxy and the wire proxy in
    parallel); ``flag`` is what a bad or missing release is named by (the command's option)."""
    kafka_release.parse_kafka_version(kafka_version, flag)
    java, major = jdk.find_java()
    with cache_lock():
        # all three at once: Maven waits on the network while the two Go builds compile (a cold
        # `make run` spent 24 s building the wire proxy after Toxiproxy)
        with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
            kafka_f = pool.submit(kafka_release.fetch_kafka, kafka_version, flag=flag)
            tox_f = pool.submit(toxiproxy_build.build_toxiproxy)
            kwire_f = pool.submit(kwire_build.build_kwire)
            libs, tox, kwire = kafka_f.result(), tox_f.result(), kwire_f.result()
    return Artifacts(kafka_version=kafka_version, kafka_libs=libs, toxiproxy_bin=tox, java=java, kwire_bin=kwire)


def ready(kafka_version: str) -> Artifacts | None:
    """The artifacts if all are already cached, without fetching or locking (for ``cluster up``)."""
    libs = kafka_release.kafka_ready(kafka_version)
    tox, kwire = toxiproxy_build.toxiproxy_bin(), kwire_build.kwire_bin()
    if libs is None or not tox.is_file() or not kwire.is_file():
        return None
    java, _ = jdk.find_java()
    return Artifacts(kafka_version=kafka_version, kafka_libs=libs, toxiproxy_bin=tox, java=java, kwire_bin=kwire)
