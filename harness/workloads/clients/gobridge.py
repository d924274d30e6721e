"""The ``Client``, ``Reader`` and ``GroupReader`` protocols over Go clients -- franz-go
(github.com/twmb/franz-go) and IBM/sarama (github.com/IBM/sarama) -- each in a bridge binary of its
own per version (``harness/workloads/clients/go_src``, built by ``go_build.py``) that speaks the Java bridge's
protocol (``bridged.py``). One bridge process per workload process and library version. Versions,
what each client can do, the error mapping: docs/CLIENTS.md ("The Go clients").

franz-go commits a consumer's offsets in a transaction only through that consumer's own client
(``GroupTransactSession``), so the copier's group reader and producer must be one client in the
bridge: a franz-go group reader waits to be paired, and the next franz-go producer this process
opens (the copier opens its reader, then its producer) is opened paired with it.
"""

from __future__ import annotations

import atexit
import logging
import threading
from typing import Any

from harness.workloads.client import ErrorFacts
from harness.workloads.clients import go_build
from harness.workloads.clients.bridged import (
    START_TIMEOUT_S,
    BridgedClient,
    BridgedConsumer,
    BridgedGroupMember,
    LineBridge,
    facts_from,
    owner_name,
)
from harness.workloads.clients.setting_names import java_names

log = logging.getLogger(__name__)

FRANZ = go_build.GoClient(
    "franz-go", "github.com/twmb/franz-go", "franz", oldest=(1, 18, 0),
    oldest_why="1.18.0 is the oldest release the bridge is built and tried with (KIP-890 part 1's TRANSACTION_ABORTABLE)")
SARAMA = go_build.GoClient(
    "sarama", "github.com/IBM/sarama", "sarama", oldest=(1, 40, 0),
    oldest_why="the module is github.com/IBM/sarama from 1.40.0 on (Shopify/sarama before; transactions came in 1.37.0)",
    delivery_timeout=False,
    # 1.50.2 sends the group's generation and member with a transaction's offsets (TxnOffsetCommit v3,
    # KIP-447); before it sarama names the group only, and a copier that lost its partitions is not fenced
    variants=(((1, 50, 2), ("offsets_generation.go",), ("offsets_group_only.go",)),))
#: The Go clients by library name.
GO_CLIENTS = {c.name: c for c in (FRANZ, SARAMA)}


class GoBridge(LineBridge):
    """One bridge process serving this process's clients of one Go client library version."""

    def __init__(self, client: go_build.GoClient, version: str) -> None:
        binary = go_build.ready(client, version) or go_build.ensure(client, version)
        # the owner in the command line: procs.describe names the bridge after its workload
        super().__init__([str(binary), f"--client-of={owner_name()}"], f"{client.name} client bridge")
        self.version = str(self.hello["version"])
        log.info(f"{self.what} pid {self.proc.pid}: {client.name} {self.version} on {self.hello['go']}, "
                 f"answering after {self.startup_s * 1000:.0f} ms")


_bridges: dict[tuple[str, str], GoBridge] = {}
_bridges_lock = threading.Lock()
#: franz-go group readers of this process not yet paired with a producer, by version
_unpaired: dict[str, int] = {}


def bridge(name: str, version: str) -> GoBridge:
    """This process's bridge for ``name`` (``franz-go``, ``sarama``) at ``version``, started at first use."""
    with _bridges_lock:
        b = _bridges.get((name, version))
        if b is None or b.proc.poll() is not None:
            b = _bridges[(name, version)] = GoBridge(GO_CLIENTS[name], version)
        return b


@atexit.register
def _shutdown_all() -> None:
    for b in list(_bridges.values()):
        b.shutdown()


def prepare(name: str, version: str) -> None:
    """Build the bridge of ``name`` at ``version`` into the cache if it is not there."""
    go_build.ensure(GO_CLIENTS[name], version)


def producer_config(bootstrap: str, txn_id: str, transaction_timeout_ms: int, overrides: dict[str, Any],
                    delivery_timeout: bool = True) -> dict[str, Any]:
    """A Go producer's settings, by the Java names the bridge maps, mirroring the Java bridge's:
    linger.ms 5, a 5 s connection set-up timeout, records expiring no later than the transaction
    would (``delivery_timeout``: sarama has none). Idempotence and acks=all come with transactions
    in both Go clients."""
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                            "transaction.timeout.ms": transaction_timeout_ms, "linger.ms": 5,
                            "socket.connection.setup.timeout.ms": 5000}
    if delivery_timeout:
        conf["delivery.timeout.ms"] = max(transaction_timeout_ms, 30_000 + 5)
    return {**conf, **java_names(overrides)}


def client_producer_config(name: str, bootstrap: str, txn_id: str, transaction_timeout_ms: int,
                           overrides: dict[str, Any]) -> dict[str, Any]:
    """The settings the bridge's producer of Go client ``name`` is opened with: a workload's, and
    the perf mode's (``eos-chaos bench producer``), so that both measure the same client setup."""
    return producer_config(bootstrap, txn_id, transaction_timeout_ms, overrides, GO_CLIENTS[name].delivery_timeout)


def consumer_config(bootstrap: str, group: str | None, overrides: dict[str, Any]) -> dict[str, Any]:
    """A Go consumer's settings: read_committed, no auto-commit, from the earliest offset."""
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "isolation.level": "read_committed",
                            "auto.offset.reset": "earliest"}
    if group is not None:
        conf.update({"group.id": group, "enable.auto.commit": False})
    return {**conf, **java_names(overrides)}


class _GoClient(BridgedClient):
    LIBRARY = ""

    def _open_bridge(self, version: str) -> LineBridge:
        self.version = version
        return bridge(self.LIBRARY, version)

    def _config(self, bootstrap: str, txn_id: str, transaction_timeout_ms: int, overrides: dict[str, Any]) -> dict[str, Any]:
        return client_producer_config(self.LIBRARY, bootstrap, txn_id, transaction_timeout_ms, overrides)


class _GoReader(BridgedConsumer):
    LIBRARY = ""

    def __init__(self, version: str, bootstrap: str, group: str, partitions: list[tuple[str, int]],
                 overrides: dict[str, Any] | None = None) -> None:
        # ``group`` is the protocol's (every reader is opened alike); an assign-mode reader needs none
        super().__init__(bridge(self.LIBRARY, version), consumer_config(bootstrap, None, overrides or {}),
                         assign=[[t, p] for t, p in partitions])


class _GoGroupReader(BridgedGroupMember):
    LIBRARY = ""

    def __init__(self, version: str, bootstrap: str, group: str, topics: list[str],
                 overrides: dict[str, Any] | None = None) -> None:
        super().__init__(bridge(self.LIBRARY, version), consumer_config(bootstrap, group, overrides or {}),
                         subscribe=list(topics))


class FranzClient(_GoClient):
    """A transactional franz-go client; paired with this process's unpaired franz-go group reader, if any."""

    LIBRARY = FRANZ.name
    GROUP_READER = "FranzGroupReader"

    def _pairing(self, version: str) -> dict[str, Any]:
        group = _unpaired.pop(version, None)
        return {} if group is None else {"group": group}


class FranzReader(_GoReader):
    LIBRARY = FRANZ.name


class FranzGroupReader(_GoGroupReader):
    """A franz-go group member, waiting for the producer it will share its client with."""

    LIBRARY = FRANZ.name

    def __init__(self, version: str, bootstrap: str, group: str, topics: list[str],
                 overrides: dict[str, Any] | None = None) -> None:
        super().__init__(version, bootstrap, group, topics, overrides)
        self.version = version
        _unpaired[version] = self.handle

    def close(self) -> None:
        if _unpaired.get(self.version) == self.handle:
            del _unpaired[self.version]
        super().close()


class SaramaClient(_GoClient):
    LIBRARY = SARAMA.name
    GROUP_READER = "SaramaGroupReader"


class SaramaReader(_GoReader):
    LIBRARY = SARAMA.name


class SaramaGroupReader(_GoGroupReader):
    LIBRARY = SARAMA.name


def client_facts(name: str, version: str, exception: dict[str, Any]) -> ErrorFacts:
    """How the bridge of ``name`` at ``version`` maps an error built in it (``{"code": N}`` Kafka's
    error code N, ``{"kind": ...}`` one of the library's own; ``"during"``: the call, e.g.
    ``producer.commit``) to ``ErrorFacts``: the unit tests' view of the mapping."""
    return facts_from(bridge(name, version).request("facts", START_TIMEOUT_S, exception=exception))
