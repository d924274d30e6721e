"""What a cluster the harness did not start is, read from it (not assumed): its id, brokers, finalized
feature levels and each broker's settings that differ from Kafka's defaults, with the settings a
transactional run depends on always listed. The journal and the report ("Cluster (as read)") record it."""

from __future__ import annotations

from typing import Any

from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined]  # not in its __all__

from harness.kafka.features import finalized

#: Broker settings an exactly-once run depends on: listed whatever their source.
KEY_SETTINGS = ("min.insync.replicas", "default.replication.factor", "unclean.leader.election.enable",
                "transaction.state.log.replication.factor", "transaction.state.log.min.isr",
                "transactional.id.expiration.ms", "transaction.max.timeout.ms", "offsets.topic.replication.factor",
                "group.coordinator.rebalance.protocols", "log.flush.interval.messages")
#: One DescribeConfigs round trip per broker.
FACTS_TIMEOUT_S = 30.0


def read_facts(admin: AdminClient, bootstrap: str) -> dict[str, Any]:
    """The cluster's facts as read through ``admin`` (its DIRECT listeners, ``bootstrap``); a part
    that cannot be read says why instead of failing the run."""
    facts: dict[str, Any] = {}
    try:
        md = admin.list_topics(timeout=FACTS_TIMEOUT_S)
        facts.update(cluster_id=md.cluster_id, controller_id=md.controller_id,
                     brokers={str(b.id): f"{b.host}:{b.port}" for b in md.brokers.values()})
    except Exception as exc:  # noqa: BLE001 - a fact not read is said, never a failed run
        facts["metadata_error"] = str(exc)
        return facts
    try:
        facts["features"] = finalized(bootstrap, FACTS_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - see above
        facts["features_error"] = str(exc)
    facts["broker_settings"] = {b: _settings(admin, b) for b in sorted(facts["brokers"], key=int)}
    return facts


def _settings(admin: AdminClient, broker: str) -> dict[str, Any]:
    """The broker's settings that are not Kafka's defaults, and the key ones whatever they are."""
    res = ConfigResource(ConfigResource.Type.BROKER, broker)
    try:
        entries = admin.describe_configs([res])[res].result(timeout=FACTS_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - see read_facts
        return {"error": str(exc)}
    out = {}
    for name, e in sorted(entries.items()):
        if name in KEY_SETTINGS or (not e.is_default and not e.is_sensitive):
            out[name] = e.value
    return out
