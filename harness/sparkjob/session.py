"""A Spark session sized for this machine: ``local[2]`` on 127.0.0.1, no UI, few shuffle
partitions, the Kafka connector's jars from the cache. ``EOS_CHAOS_SPARK_MASTER`` points the
checker's engine at a real Spark master instead (histories larger than one machine)."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from clusters.spark import spark_jars
from harness.base.errors import EnvironmentProblem
from harness.sparkjob.jvm_down import interrupts_end_the_jvm

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ENV_MASTER = "EOS_CHAOS_SPARK_MASTER"
#: Two cores on the reference machine, shared with three brokers: two tasks at a time, and
#: shuffles of a handful of partitions (Spark's 200 would be 200 tiny tasks per stage).
LOCAL_MASTER = "local[2]"
SHUFFLE_PARTITIONS = 4
#: Driver heap (in local mode also the executors'): the job collects one micro-batch (a few
#: thousand records); the checker's engine joins tens of millions of rows and spills what does
#: not fit, so it gets more (24 GB machine; the brokers take ~1.5 GB).
JOB_MEMORY, CHECKER_MEMORY = "1g", "2g"
#: The JVM compiles a method with its optimizing compiler (C2) after this many times the JVM's
#: default number of calls or loop iterations. A check plans and compiles dozens of queries, each
#: once, and C2 spent 19 of a cold check's 82 s of CPU at 10M values compiling that code (Janino,
#: serialization, each query's generated classes); 8x the thresholds: 10 s, the hot loops still
#: compiled (the tasks' CPU unchanged; 16x left them slower). HotSpot's flags; another JVM ignores them.
JIT_THRESHOLDS_X = 8
_JIT_FLAGS = " ".join(["-XX:+IgnoreUnrecognizedVMOptions"] + [
    f"-XX:{flag}={default * JIT_THRESHOLDS_X}" for flag, default in (
        ("Tier4InvocationThreshold", 5000), ("Tier4MinInvocationThreshold", 600), ("Tier4CompileThreshold", 15000),
        ("Tier4BackEdgeThreshold", 40000))])
#: The checker engine's settings: tables up to 64 MB are broadcast rather than shuffled; the driver
#: JVM (in local mode also the executors) compiles less (``JIT_THRESHOLDS_X``).
CHECKER_CONF = {"spark.sql.autoBroadcastJoinThreshold": str(64 * 2**20), "spark.driver.extraJavaOptions": _JIT_FLAGS}


def require_pyspark(why: str) -> None:
    """EnvironmentProblem naming the extra to install when PySpark is not (it is the ``spark`` extra,
    so a plain install stays light)."""
    import importlib.util

    if importlib.util.find_spec("pyspark") is None:
        raise EnvironmentProblem(f"{why} needs PySpark, which is not installed: pip install 'eos-chaos[spark]' "
                                 "(make setup installs it)")


def spark_env() -> dict[str, str]:
    """Environment for a process that starts Spark: bind to loopback only, never look up the
    host name on the network."""
    return {"SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_HOSTNAME": "localhost", "PYSPARK_PYTHON": sys.executable}


def session(app: str, kafka: bool = False, master: str | None = None, tmp_dir: Path | None = None,
            conf: dict[str, str] | None = None, memory: str = JOB_MEMORY) -> SparkSession:
    """A new (or the process's existing) Spark session named ``app``; ``kafka`` adds the connector,
    ``conf`` overrides settings (tests: tiny data wants no code generation)."""
    require_pyspark(f"Spark ({app})")
    os.environ.update(spark_env())
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.appName(app)
         .master(master or os.environ.get(ENV_MASTER) or LOCAL_MASTER)
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.driver.memory", memory)
         .config("spark.sql.shuffle.partitions", str(SHUFFLE_PARTITIONS))
         .config("spark.sql.adaptive.enabled", "true")
         .config("spark.sql.session.timeZone", "UTC"))
    if tmp_dir is not None:
        b = b.config("spark.local.dir", str(tmp_dir))
    for k, v in (conf or {}).items():
        b = b.config(k, v)
    if kafka:
        jars = spark_jars.spark_kafka_ready() or spark_jars.ensure_spark()
        b = b.config("spark.jars", ",".join(str(j) for j in jars))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


@contextmanager
def checker_session() -> Iterator[SparkSession]:
    """A session for the checker's Spark engine, its shuffle spill in a temp folder (outside the run
    folder); stopped, and the spill removed, at exit. Ctrl-C or SIGTERM, starting or running, takes
    its JVM down and raises ``KeyboardInterrupt`` (``jvm_down``: not a py4j error, no JVM left)."""
    with (tempfile.TemporaryDirectory(prefix="eos-chaos-spark-", ignore_cleanup_errors=True) as tmp,
          interrupts_end_the_jvm() as guard):
        spark = session("eos-chaos-checker", tmp_dir=Path(tmp), memory=CHECKER_MEMORY, conf=CHECKER_CONF)
        guard.arm()  # again: PySpark put its own Ctrl-C handler in place
        try:
            yield spark
        finally:
            if not guard.interrupted:  # else the JVM is killed, not asked (it may not answer)
                spark.stop()
