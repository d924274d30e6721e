"""The Spark job's part of a run (docs/SPARK.md): PySpark required before anything starts, the
scenario's standalone Spark cluster (``spark: standalone``) started beside Kafka and named to the job,
healed and stopped after the Kafka cluster's heal; and where its driver and executors read an armed
fault."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from chaos.control import SparkControl
from clusters.backends.protocol import Cluster
from clusters.spark.standalone import EXECUTOR_CONF, SparkStandalone
from harness.phases.kind_run import KindRun, ScenarioView
from harness.sparkjob.job import ARM_FILE, ENV_JOB_CONF, ENV_JOB_MASTER, job_dir
from harness.sparkjob.session import require_pyspark
from harness.sparkjob.sink import EXECUTOR_ARM_FILE

log = logging.getLogger(__name__)


class SparkJobRun(KindRun):
    def __init__(self, kind: str, scenario: ScenarioView) -> None:
        super().__init__(kind, scenario)
        self.spark: SparkStandalone | None = None

    def preflight(self) -> None:
        require_pyspark(f"scenario {self.scenario.name} (a {self.kind} workload)")

    def start(self, cluster: Cluster, run_dir: Path, env: dict[str, str]) -> None:
        """The run's standalone Spark cluster (``spark: standalone``), named to the job through ``env``."""
        if self.scenario.spark != "standalone" or self.spark is not None:
            return
        spark = SparkStandalone(run_dir / "spark-cluster", cluster.cluster_id)
        spark.start()
        log.info(f"Spark standalone cluster: master {spark.master_url}, workers {spark.worker_ids()} (pids "
                 f"{sorted(spark.worker_pids.values())})")
        env[ENV_JOB_MASTER], env[ENV_JOB_CONF] = spark.master_url, json.dumps(EXECUTOR_CONF)
        self.spark = spark

    def side_cluster(self) -> SparkControl | None:
        return self.spark

    def heal(self) -> list[str]:
        """Heal the Spark cluster (every paused process resumed, every worker up and registered: the
        proof its faults ended), then stop it; what could not be healed."""
        spark, self.spark = self.spark, None
        if spark is None:
            return []
        try:
            problems = [f"spark: {p}" for p in spark.heal()]
        finally:
            gone = spark.stop()
        log.info(f"Spark standalone cluster stopped ({len(gone)} processes)" + (f"; heal problems: {problems}" if problems else ""))
        return problems

    @classmethod
    def driver_arm(cls, run_dir: Path, name: str) -> Path:
        return job_dir(run_dir, name) / ARM_FILE

    @classmethod
    def executor_arm(cls, run_dir: Path, name: str) -> Path:
        return job_dir(run_dir, name) / EXECUTOR_ARM_FILE
