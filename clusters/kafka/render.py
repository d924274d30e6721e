"""Render each node's files: server.properties, its own hosts file, its log4j2 configuration."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from pathlib import Path

from clusters.kafka.topology import Listener, Topology

#: ``transaction.state.log.num.partitions``: how many partitions place the transaction coordinators
#: (harness/kafka/placement.py names a txn-producer's transactional.ids by it).
TXN_STATE_PARTITIONS = 10
#: Broker settings every cluster gets (docs/reference/cluster.md). Values that matter carry why.
BROKER_DEFAULTS: dict[str, str] = {
    "process.roles": "broker,controller",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "INTERNAL",
    "listener.security.protocol.map": ",".join(f"{lst.value}:PLAINTEXT" for lst in Listener),
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "unclean.leader.election.enable": "false",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "10",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": str(TXN_STATE_PARTITIONS),
    "group.initial.rebalance.delay.ms": "0",
    # Abort timed-out transactions within seconds, not the 10 s default, so hanging transactions
    # resolve inside a run's heal window.
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "5000",
    # A follower cut off from its leader leaves the ISR after this; 30 s default makes tests slow,
    # while anything under a few seconds flaps on a loaded 2-core machine.
    "replica.lag.time.max.ms": "10000",
    "auto.create.topics.enable": "false",
    # Small thread pools: three brokers share two cores.
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.replica.fetchers": "1",
    "background.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "log.cleaner.threads": "1",
    "log.flush.offset.checkpoint.interval.ms": "5000",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
}

#: Heap per broker; three brokers plus Toxiproxy, Spark and workloads share 24 GB (resident <= ~2.5 GB).
HEAP = "512m"
JVM_OPTS = (
    f"-Xms{HEAP}",
    f"-Xmx{HEAP}",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:+ExitOnOutOfMemoryError",
    # Bound what lives outside the heap (metaspace, code cache, NIO buffers) so RSS stays predictable.
    "-XX:MaxMetaspaceSize=128m",
    "-XX:ReservedCodeCacheSize=64m",
    "-XX:MaxDirectMemorySize=128m",
    "-XX:CICompilerCount=2",
    "-Xss512k",
    "-Djava.awt.headless=true",
)


def server_properties(topo: Topology, node: int, data_dir: Path, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The complete broker configuration of ``node``."""
    port = topo.port
    name = topo.host_name
    props = dict(BROKER_DEFAULTS)
    props.update(
        {
            "node.id": str(node),
            "controller.quorum.voters": ",".join(f"{n}@{name(n)}:{port(Listener.CONTROLLER)}" for n in topo.node_ids),
            "listeners": ",".join(f"{lst.value}://{topo.bind(node, lst)}" for lst in Listener),
            # CLIENT: the client proxy in front of this node. INTERNAL/CONTROLLER: a name each source
            # resolves to its own proxy (the raft leader hands its controller endpoint to followers).
            # DIRECT: the real socket, never faulted.
            "advertised.listeners": ",".join(
                [
                    f"CLIENT://{topo.ip(0, node)}:{port(Listener.CLIENT)}",
                    f"INTERNAL://{name(node)}:{port(Listener.INTERNAL)}",
                    f"CONTROLLER://{name(node)}:{port(Listener.CONTROLLER)}",
                    f"DIRECT://{topo.bind(node, Listener.DIRECT)}",
                ]
            ),
            "log.dirs": str(data_dir),
        }
    )
    if overrides:
        props.update(overrides)
    return props


def format_properties(props: Mapping[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())


def hosts_file(topo: Topology, node: int) -> str:
    """The hosts file of ``node``'s JVM: peers through this node's proxies; itself directly, or through the
    wire proxy's self hop when the links between brokers go through it (``Topology.resolved``)."""
    lines = ["127.0.0.1 localhost"]
    # InetAddress.getLocalHost() must still resolve when the JVM reads only this file.
    lines.append(f"127.0.0.1 {socket.gethostname()}")
    lines += [f"{topo.resolved(node, n)} {topo.host_name(n)}" for n in topo.node_ids]
    return "\n".join(lines) + "\n"


def log4j2_properties(log_file: Path) -> str:
    """Broker logging to one file per node, kept in the run folder; quiet loggers turned down."""
    return f"""status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log_file}
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d{{ISO8601}}] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.kafka_request.name = kafka.request.logger
logger.kafka_request.level = WARN
logger.state_change.name = state.change.logger
logger.state_change.level = INFO
logger.controller.name = org.apache.kafka.controller
logger.controller.level = INFO
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
"""
