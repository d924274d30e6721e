"""The wire proxy built from its Go source beside this module (``kwire/``) into the cache, under a digest
of that source (an edit is a new path: rebuilt)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from clusters.builds import javac, pins
from clusters.builds.golang import GoProgram, build_go_programs, go_directive, go_source_digest
from harness.base.errors import EnvironmentProblem
from harness.base.paths import cache_dir

#: The wire proxy's Go source (standard library only: building it needs no network).
KWIRE_SOURCE = Path(__file__).resolve().parent / "kwire"


def kwire_bin() -> Path:
    """The wire proxy binary of the current source (a changed source is a new path: rebuilt)."""
    return cache_dir() / "kwire" / go_source_digest(KWIRE_SOURCE) / "kwire"


def kwire_program() -> GoProgram:
    """The wire proxy, from its source in this repository (``clusters/wire/kwire``)."""
    return GoProgram("kwire", "eos-chaos/kwire", "eos-chaos/kwire", "v0.0.0", go_directive(KWIRE_SOURCE), kwire_bin(),
                     KWIRE_SOURCE)


def build_kwire() -> Path:
    """Build the wire proxy from ``clusters/wire/kwire`` into the cache; return the binary."""
    return build_go_programs([kwire_program()])[0]


#: The rewrite fixtures (kwire/testdata/responses) and their generator, run with the pinned Kafka's own
#: message classes: what a broker writes, and what it would write with the proxy's addresses.
FIXTURE_SOURCES = KWIRE_SOURCE / "testdata"
FIXTURES = FIXTURE_SOURCES / "responses"
#: How long the generator may take (a JVM start and a hundred small messages: seconds).
GENERATE_TIMEOUT_S = 300


def fixtures_program() -> javac.Program:
    """testdata/GenResponses.java against kafka-clients of the pinned Kafka release."""
    deps = [("org.apache.kafka", "kafka-clients", pins.KAFKA_VERSION)]
    return javac.Program("the wire proxy's rewrite fixtures", FIXTURE_SOURCES, javac.pom("kwire-fixtures", deps),
                         cache_dir() / "kwire-fixtures" / pins.KAFKA_VERSION, f"kafka-clients {pins.KAFKA_VERSION}")


def generate_fixtures(out: Path) -> list[Path]:
    """Write the rewrite fixtures as the pinned Kafka encodes them into ``out``; return the files."""
    build = javac.ready(fixtures_program()) or javac.ensure(fixtures_program())
    proc = subprocess.run([str(build.java), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", build.classpath,
                           "GenResponses", str(out)], capture_output=True, text=True, timeout=GENERATE_TIMEOUT_S)
    if proc.returncode != 0:
        raise EnvironmentProblem(f"GenResponses failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return sorted(out.iterdir())
