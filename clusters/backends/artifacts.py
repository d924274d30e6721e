"""What a cluster runs, ready in the cache: Kafka's jars (``clusters.kafka.kafka_release``), Toxiproxy
and the wire proxy (each built by its own package, both in one Go build), and the Java to run the
brokers with. The standard library only, down to what it imports: `make run` runs ``main`` beside
pip's install of the dependencies."""

from __future__ import annotations

import concurrent.futures
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clusters.builds import jdk, pins
from clusters.builds.cache import cache_lock
from clusters.builds.golang import build_go_programs
from clusters.kafka import kafka_release
from clusters.toxiproxy import toxiproxy_build
from clusters.wire import kwire_build

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Artifacts:
    """Paths of a ready set of artifacts."""

    kafka_version: str
    kafka_libs: Path
    toxiproxy_bin: Path
    java: Path
    #: the wire proxy (clusters/wire/kwire/), built from the repository's own Go source
    kwire_bin: Path | None = None


def build_servers() -> tuple[Path, Path]:
    """Toxiproxy's server and the wire proxy, built in one `go build` if missing: what a local cluster runs."""
    tox, kwire = build_go_programs([toxiproxy_build.toxiproxy_program(), kwire_build.kwire_program()])
    return tox, kwire


def ensure(kafka_version: str = pins.KAFKA_VERSION, flag: str = "--kafka-version") -> Artifacts:
    """Everything a local cluster needs, fetched if missing (Kafka, Toxiproxy and the wire proxy in
    parallel); ``flag`` is what a bad or missing release is named by (the command's option)."""
    kafka_release.parse_kafka_version(kafka_version, flag)
    java, major = jdk.find_java()
    with cache_lock():
        # Maven waits on the network while Go compiles (both Go programs in one build)
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            kafka_f = pool.submit(kafka_release.fetch_kafka, kafka_version, flag=flag)
            go_f = pool.submit(build_servers)
            libs, (tox, kwire) = kafka_f.result(), go_f.result()
    return Artifacts(kafka_version=kafka_version, kafka_libs=libs, toxiproxy_bin=tox, java=java, kwire_bin=kwire)


def ready(kafka_version: str) -> Artifacts | None:
    """The artifacts if all are already cached, without fetching or locking (for ``cluster up``)."""
    libs = kafka_release.kafka_ready(kafka_version)
    tox, kwire = toxiproxy_build.toxiproxy_bin(), kwire_build.kwire_bin()
    if libs is None or not tox.is_file() or not kwire.is_file():
        return None
    java, _ = jdk.find_java()
    return Artifacts(kafka_version=kafka_version, kafka_libs=libs, toxiproxy_bin=tox, java=java, kwire_bin=kwire)


def main(argv: Sequence[str]) -> int:
    """``python -m clusters.backends.artifacts [--kafka-version V]``: ``ensure`` with the standard
    library only, so `make run` sets up beside pip's install of the dependencies. 0 when all is in the
    cache; 1 otherwise, in one line: `eos-chaos setup` runs next and names the problem."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    version = argv[1] if len(argv) == 2 and argv[0] == "--kafka-version" else pins.KAFKA_VERSION
    try:
        ensure(version)
    except Exception as exc:  # noqa: BLE001 - any failure: the set-up after the install says it properly
        log.info(f"set-up beside the install stopped ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); "
                 "eos-chaos setup tries again")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
