"""The shipped Flink job (``harness/apps/flink/src``; docs/APPS.md, "flink-job"; docs/FLINK.md): a
KafkaSource (read_committed) whose records a KafkaSink writes to the output topic, key kept, value with
``:flink`` appended, ``DeliveryGuarantee.EXACTLY_ONCE`` (or ``AT_LEAST_ONCE``: the negative control).
It runs as one JVM, a MiniCluster in the launched process, checkpointing to ``--state-dir`` every
``--checkpoint-ms``; each start resumes from the newest retained checkpoint there, so a kill -9 of the
JVM and the harness's restart of the instance are a job restart from its last checkpoint.
``python -m harness.apps.flink_job ...`` builds it against Flink and flink-connector-kafka (Maven
Central, into the cache) if missing, then execs its JVM.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from clusters.builds import javac, pins
from harness.apps import jvm
from harness.base.paths import REPO_ROOT, cache_dir

MODULE = "harness.apps.flink_job"
SOURCES = REPO_ROOT / "harness" / "apps" / "flink" / "src"
MAIN_CLASS = "eoschaos.apps.FlinkSuffixJob"
GUARANTEES = ("exactly_once", "at_least_once")
#: flink-connector-kafka's TransactionNamingStrategy: a new transactional.id per checkpoint (the
#: default) or ids reused from a pool (the strategy both open issues of docs/FLINK.md are about)
NAMINGS = ("incrementing", "pooling")
#: WARN and up to stderr, with a timestamp; INFO from the job itself (what it restored from), the
#: checkpoint coordinator ("Completed checkpoint N": the harness's readiness, and the evidence of
#: what each restart resumed from), the execution graph (the job's failures and restarts) and the
#: Kafka sink (which transactions a recovery commits and aborts).
LOG_FLAGS = ("-Dorg.slf4j.simpleLogger.logFile=System.err", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
             "-Dorg.slf4j.simpleLogger.showDateTime=true",
             "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
             "-Dorg.slf4j.simpleLogger.log.eoschaos=info",
             "-Dorg.slf4j.simpleLogger.log.org.apache.flink.runtime.checkpoint.CheckpointCoordinator=info",
             "-Dorg.slf4j.simpleLogger.log.org.apache.flink.runtime.executiongraph.ExecutionGraph=info",
             "-Dorg.slf4j.simpleLogger.log.org.apache.flink.connector.kafka.sink=info",
             # a line per checkpoint and subtask ("Flushing new partitions", each new producer): too many
             "-Dorg.slf4j.simpleLogger.log.org.apache.flink.connector.kafka.sink.internal.FlinkKafkaInternalProducer=warn",
             "-Dorg.slf4j.simpleLogger.log.org.apache.flink.metrics=error")


def program() -> javac.Program:
    deps = [("org.apache.flink", a, pins.FLINK_VERSION)
            for a in ("flink-streaming-java", "flink-clients", "flink-connector-base")]
    deps += [("org.apache.flink", "flink-connector-kafka", pins.FLINK_KAFKA_CONNECTOR_VERSION),
             # the connector's slf4j-api is 1.7; the simple backend of 2.x needs the 2.x API
             ("org.slf4j", "slf4j-api", pins.SLF4J_VERSION), ("org.slf4j", "slf4j-simple", pins.SLF4J_VERSION)]
    return javac.Program("the Flink job flink-job", SOURCES, javac.pom("flink-job", deps),
                         cache_dir() / "apps" / "flink-job" / f"{pins.FLINK_VERSION}-{pins.FLINK_KAFKA_CONNECTOR_VERSION}",
                         f"Flink {pins.FLINK_VERSION}, flink-connector-kafka {pins.FLINK_KAFKA_CONNECTOR_VERSION}")


def prepare() -> javac.Build:
    """The job, fetched and compiled into the cache if missing."""
    return javac.ready(program()) or javac.ensure(program())


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer of 1 or more")
    return n


def _cycle(text: str) -> str:
    for n in text.split(","):
        _positive(n)
    return text


#: flag -> help, every one required
REQUIRED = (("--bootstrap", "HOST:PORT,... of the brokers"), ("--input", "the input topic"),
            ("--output", "the output topic"),
            ("--group", "the KafkaSource's group.id (its offsets are committed there at each checkpoint)"),
            ("--transactional-id-prefix", "the KafkaSink's transactionalIdPrefix"),
            ("--state-dir", "checkpoints and savepoints of this instance (kept across its restarts)"))


def parser() -> argparse.ArgumentParser:
    p = jvm.parser(MODULE, "A Flink job on a MiniCluster: KafkaSource -> value + ':flink' -> KafkaSink.")
    for flag, what in REQUIRED:
        p.add_argument(flag, required=True, help=what)
    p.add_argument("--guarantee", choices=GUARANTEES, default=GUARANTEES[0], help="the KafkaSink's DeliveryGuarantee")
    p.add_argument("--parallelism", type=_positive, default=1, help="the job's parallelism on a fresh start")
    p.add_argument("--restored-parallelism", type=_cycle, default=None,
                   help="N[,N...]: the parallelism of each resumption from a retained checkpoint, the list cycled "
                        "(default: --parallelism): a rescale")
    p.add_argument("--naming", choices=NAMINGS, default=NAMINGS[0], help="the KafkaSink's TransactionNamingStrategy")
    p.add_argument("--checkpoint-ms", type=_positive, default=1000, help="the checkpoint interval")
    p.add_argument("--transaction-timeout-ms", type=_positive, default=60_000,
                   help="the sink producers' transaction.timeout.ms")
    return p


def java_args(ns: argparse.Namespace, build: javac.Build) -> list[str]:
    """The JVM's arguments after its options: the log flags, the class path, the main class and the job's flags."""
    flags = {flag: getattr(ns, flag[2:].replace("-", "_")) for flag, _ in REQUIRED}
    flags |= {"--guarantee": ns.guarantee, "--parallelism": str(ns.parallelism), "--naming": ns.naming,
              "--checkpoint-ms": str(ns.checkpoint_ms), "--transaction-timeout-ms": str(ns.transaction_timeout_ms)}
    if ns.restored_parallelism is not None:
        flags["--restored-parallelism"] = ns.restored_parallelism
    return [*LOG_FLAGS, "-cp", build.classpath, MAIN_CLASS, *(x for kv in flags.items() for x in kv)]


def main(argv: Sequence[str] | None = None) -> NoReturn:
    p = parser()
    ns = p.parse_args(argv)

    def prepared() -> tuple[Path, list[str]]:
        build = prepare()
        return build.java, java_args(ns, build)

    jvm.launch(p.prog, prepared)


if __name__ == "__main__":
    main()
