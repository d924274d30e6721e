"""``eos-chaos cluster up|down|status``: a cluster that outlives one command; ``cluster heal``: an
external cluster put back as it was after a run that could not heal it."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import typer

from clusters.backends import backends, state
from clusters.backends.backends import Backend
from clusters.backends.reclaim import Owner
from clusters.kafka import kafka_release
from clusters.spark.standalone import recorded_status as spark_status
from harness.base.errors import ConfigError
from harness.cli import exits
from harness.cli.console import out, print_json
from harness.cli.guard import guarded
from harness.cli.options import (
    AllowNonDisposableOpt,
    BackendOpt,
    BrokerConfig,
    InventoryOpt,
    InventoryRunOpt,
    KafkaVersion,
    PortBase,
    TransactionVersion,
    cluster_features,
    external_backend,
    kafka_artifacts,
    parse_broker_config,
)
from harness.rundir.runfolder import new_run_dir

log = logging.getLogger(__name__)
app = typer.Typer(no_args_is_help=True, help="Bring a cluster up, down, or ask how it is.")


@app.command("up")
@guarded
def cluster_up(backend: Backend = BackendOpt, kafka_version: str = KafkaVersion, port_base: int | None = PortBase,
               broker_config: list[str] = BrokerConfig, transaction_version: int | None = TransactionVersion,
               inventory: Path | None = InventoryRunOpt, allow_non_disposable: bool = AllowNonDisposableOpt,
               wire_between_brokers: bool = typer.Option(
                   False, "--wire-between-brokers",
                   help="Route the links between brokers (and each broker's to itself) through the wire proxy too, "
                        "so request-aware faults can act on them (docs/WIRE-FAULTS.md; local backend only).")) -> None:
    """Start a 3-node cluster that stays up until `eos-chaos cluster down` (with --inventory: the
    proxies in front of a cluster you already run, after checking every node)."""
    from clusters.kafka.feature_levels import check_transaction_version

    backend = external_backend(backend, inventory, allow_non_disposable)
    if wire_between_brokers and backend is not Backend.local:  # before a fetch, too
        raise ConfigError(f"--wire-between-brokers --backend {backend.value}: that backend's wire proxy carries only "
                          "the clients' links (docs/WIRE-FAULTS.md); use --backend local")
    if backend is Backend.external:
        _external_up(port_base, broker_config, transaction_version)
        return
    overrides = parse_broker_config(broker_config)
    kafka_release.parse_kafka_version(kafka_version)
    check_transaction_version(kafka_version, transaction_version)  # before a fetch, too
    arts = kafka_artifacts(kafka_version)
    run_dir = new_run_dir("cluster")
    cluster = backends.new_cluster(backend, arts, run_dir, port_base, overrides, detached=True,
                                   transaction_version=transaction_version, wire_between_brokers=wire_between_brokers)
    t0 = time.monotonic()
    log.info(f"starting {backend.value} cluster, Kafka {kafka_version}, run folder {run_dir}")
    cluster.start()
    s = cluster.status()
    out.print(f"{backend.value} cluster up and healthy in {time.monotonic() - t0:.1f}s", highlight=False)
    read = cluster_features(s.direct_bootstrap)
    asked = "the release's default" if transaction_version is None else f"asked {transaction_version}"
    out.print(f"  transaction.version {read['transaction_version']} ({asked}), "
              f"metadata.version {(read['features'] or {}).get('metadata.version')}", highlight=False)
    out.print(f"  bootstrap (through proxies): {s.bootstrap}\n  direct bootstrap: {s.direct_bootstrap}\n"
              f"  toxiproxy: {s.toxiproxy}\n  {_wire_line(wire_between_brokers)}\n  logs: {run_dir}/nodes/", highlight=False)


def _wire_line(between_brokers: bool) -> str:
    """What the wire proxy carries, as `cluster up` and `cluster status` say it."""
    if between_brokers:
        return "wire proxy: every link, between brokers too (--wire-between-brokers)"
    return "wire proxy: the clients' links (between brokers: cluster up --wire-between-brokers)"


def _external_up(port_base: int | None, broker_config: list[str], transaction_version: int | None) -> None:
    """``cluster up --inventory FILE``: the cluster is as it is; only the proxies start."""
    if broker_config or transaction_version is not None:
        raise ConfigError("--broker-config and --transaction-version set up a cluster the harness starts; a cluster "
                          "given by --inventory runs as it is")
    run_dir = new_run_dir("cluster")
    cluster = backends.new_cluster(Backend.external, None, run_dir, port_base, detached=True)
    t0 = time.monotonic()
    cluster.start()
    s = cluster.status()
    out.print(f"external cluster checked and fronted in {time.monotonic() - t0:.1f}s; Kafka {s.kafka_version} "
              f"(read from its jars)", highlight=False)
    out.print(f"  bootstrap (through proxies): {s.bootstrap}\n  direct bootstrap: {s.direct_bootstrap}\n"
              f"  toxiproxy: {s.toxiproxy}\n  heal journal: {s.extra.get('journal')}", highlight=False)


@app.command("down")
@guarded
def cluster_down(backend: Backend = BackendOpt, inventory: Path | None = InventoryRunOpt) -> None:
    """Stop the cluster and everything of ours left running (no error when nothing is up). With
    --inventory: undo every change the run left on its nodes and stop the proxies; the brokers stay."""
    backend = external_backend(backend, inventory, False)
    rec = state.load(backend.value)
    if rec is None:
        left = backends.reclaim(backend)
        out.print(f"no {backend.value} cluster was up{'; reclaimed what runs that are over left:' if left else ''}")
        for line in left.lines():
            out.print(f"  {line}", highlight=False)
        return
    owner = Owner(rec.owner_pid)
    gone = backends.down(rec)
    out.print(f"{backend.value} cluster down; logs kept in {rec.run_dir}", highlight=False)
    if gone:
        out.print(f"{'reclaimed (its owner, pid ' + str(owner.pid) + ', was dead)' if owner.dead else 'took down'}:",
                  highlight=False)
    for line in gone.lines():
        out.print(f"  {line}", highlight=False)


@app.command("status")
@guarded
def cluster_status(
    backend: Backend = BackendOpt,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    inventory: Path | None = InventoryRunOpt,
) -> None:
    """Show the cluster's addresses and node states.

    Exit 0: a cluster is recorded (shown whatever its nodes' states; `up` says whether any node is).
    Exit 2: no cluster of the backend is up (an environment without one; not a finding)."""
    backend = external_backend(backend, inventory, False)
    rec = state.load(backend.value)
    if rec is None:
        if as_json:
            print_json({"backend": backend.value, "up": False, "nodes": [], "spark": spark_status()})
        else:
            out.print(f"no {backend.value} cluster is up")
        raise typer.Exit(exits.BAD_INPUT)
    status = backends.status(rec)
    s = status.to_json()
    s["up"] = any(n["state"] != "down" for n in s["nodes"])
    # the levels in force, read back from the cluster (a fault may have changed them), and the one
    # its storage was formatted at (null: the Kafka release's default)
    s["transaction_version_formatted"] = rec.transaction_version
    s["wire_between_brokers"] = rec.wire_between_brokers
    s.update(cluster_features(s["direct_bootstrap"]) if s["up"] else
             {"transaction_version": None, "features": None, "features_error": "no node is up"})
    # a run's standalone Spark cluster (clusters/spark/standalone.py), while one runs
    s["spark"] = spark_status()
    if as_json:
        print_json(s)
        return
    out.print(f"{s['backend']} cluster, Kafka {s['kafka_version']}, run folder {s['run_dir']}", highlight=False)
    out.print(f"  owner     {Owner(rec.owner_pid)}", highlight=False)
    out.print(f"  bootstrap {s['bootstrap']}\n  direct    {s['direct_bootstrap']}\n  toxiproxy {s['toxiproxy']}", highlight=False)
    out.print(f"  active controller {s['active_controller']}", highlight=False)
    out.print(f"  {_wire_line(rec.wire_between_brokers)}", highlight=False)
    out.print(f"  transaction.version {s['transaction_version']}"
              + (f" (formatted at {rec.transaction_version})" if rec.transaction_version is not None else "")
              + (f"; features: {s['features']}" if s.get("features") else f" ({s.get('features_error')})"), highlight=False)
    for n in s["nodes"]:
        out.print(f"  node {n['id']}: {n['state']}" + (f" (pid {n['pid']})" if n["pid"] else ""), highlight=False)
    if s["spark"]:
        sp = s["spark"]
        out.print(f"  spark master {sp['master_url']} ({sp['master_status']}, pid {sp['master_pid']}); workers "
                  + ", ".join(f"{w['worker']}: {w['state']} (pid {w['pid']})" for w in sp["workers"])
                  + f"; executors {[e['pid'] for e in sp['executors']]}", highlight=False)
    if status.would_reclaim:
        out.print(f"  a start or `eos-chaos cluster down --backend {s['backend']}` would reclaim:", highlight=False)
    for line in status.would_reclaim.lines():
        out.print(f"    {line}", highlight=False)


@app.command("heal")
@guarded
def cluster_heal(
    inventory_file: Path = InventoryOpt,
    dry_run: bool = typer.Option(False, "--dry-run", help="Print every command the heal would run on every node; "
                                                          "run none."),
) -> None:
    """Put an external cluster back as it was: undo every change its heal journal holds (after a
    runner was killed mid-fault), then remove every EOSC-* iptables chain and eec1: qdisc from the
    nodes that allow net, resume a paused broker and start a down one.

    Exit 0: every node is up and nothing is left to undo. Exit 2: what is left, node by node (or a
    run faulting the cluster now holds its journal)."""
    from clusters.backends.external import inventory, node_heal

    inv = inventory.load(inventory_file)
    if dry_run:
        r = node_heal.heal_dry_run(inv)
    else:
        r = node_heal.heal(inv)
        r.did += _reclaim_proxies(inv)
    for line in r.did:
        out.print(f"  {line}", highlight=False)
    if r.kept:
        out.print(f"journal healed; kept as {r.kept}", highlight=False)
    if r.left:
        for line in r.left:
            out.print(f"  left: {line}", highlight=False)
        raise typer.Exit(exits.BAD_INPUT)
    out.print(f"cluster {inv.name}: " + ("dry run, nothing ran" if dry_run else "every node up, nothing left to undo"),
              highlight=False)


def _reclaim_proxies(inv: Any) -> list[str]:
    """The proxies (and runs' processes) a killed runner left running in front of ``inv``'s cluster,
    stopped; its state record dropped when its owner is dead. What was done, one line each."""
    from clusters.backends import procs, reclaim
    from clusters.backends.external.external_cluster import BACKEND, cluster_id_of

    cid = cluster_id_of(inv)
    left = [t for t in procs.tagged_processes() if t.cluster_id == cid and (t.orphaned or t.owner == 0)]
    rec = state.load(BACKEND)
    if rec is not None and rec.cluster_id == cid and rec.owner_pid is not None and not procs.alive(rec.owner_pid):
        state.clear(BACKEND, cid)
    elif rec is not None and rec.cluster_id == cid:
        left = [t for t in left if t.owner != 0]  # `cluster up`'s proxies stay up until `cluster down`
    return [f"stopped {line} (its runner is dead)" for line in reclaim.kill_processes(left, "its run is over").lines()]
