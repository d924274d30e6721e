"""Request-aware faults on the links between brokers as drawn faults of ``eos-chaos hunt`` (the
seventh draw, docs/HUNT.md): a coordinator's WriteTxnMarkers to a partition's leader, the
AddPartitionsToTxn a leader sends the coordinator to verify a transaction (KIP-890 part 1; on
transaction version 2 it adds the partition), and a follower's Fetch from its leader (replication).
Each is held, its response dropped, or (the verification only) answered with an error that says it
did nothing, with the filters its requests carry (docs/WIRE-FAULTS.md, "Between brokers").

Such a fault needs a cluster whose links between brokers go through the wire proxy
(``Topology.wire_between_brokers``): the matrix starts its clusters so when a drawn scenario has
one (harness/campaigns/matrix.py), and the backends whose wire proxy carries only the clients'
links (``chaos.faults.wire.CLIENT_LINKS_ONLY_BACKENDS``) draw none."""

from __future__ import annotations

import random
from typing import Any

from chaos.faults.base import NODE_IDS
from chaos.faults.wire import CLIENT_LINKS_ONLY_BACKENDS

#: The row of the hunt's kind table (``hunt.KINDS``) that draws a fault between brokers, and its
#: weight there: 4 of 26, about one fault in six (a 100 s run holds some 3 of its 20 to 26 faults).
#: Client-side holds keep the most weight: every finding so far came from one.
KIND = "between-brokers"
WEIGHT = 4
#: What is done to the request, by weight. A drop only where the sender's wait for the lost answer
#: ends before the run's quiet end (below); an error only on the verification.
ACTIONS = {"hold-requests": 4, "drop-api-responses": 1, "error-responses": 1}
#: The requests, by weight: the markers decide what a transaction's partitions hold, so they weigh most.
APIS = {"WriteTxnMarkers": 3, "AddPartitionsToTxn": 2, "Fetch": 2}
#: The one of them whose error response the wire proxy can make (``wire_api.SYNTHESIZABLE``); its
#: errors are the hunt's harmless ones for AddPartitionsToTxn (``hunt.RETRIABLE_ERRORS``).
ANSWERED = "AddPartitionsToTxn"
#: How long a broker waits for an answer between brokers (its ``request.timeout.ms`` and a replica
#: fetcher's ``replica.socket.timeout.ms``: 30 s, the defaults the clusters keep). After a dropped
#: response its connection carries no answer until then (the proxy keeps answers in order), so the
#: markers, the verifications or the replication on it wait that long.
BROKER_WAIT_S = 30.0
#: WriteTxnMarkers' ``result`` filter, drawn: either (twice as likely), the commits, the aborts.
RESULTS = ("any", "any", "commit", "abort")
#: A share of the markers' and verifications' faults filter on ``min_producer_epoch: 1``: the
#: producer's requests after its epoch's first bump (on transaction version 2 every transaction's
#: end bumps it; on 1, a restart or a fence).
EPOCH_FILTER_SHARE = 0.25
#: A share of the verifications' faults filter on the aimed transactional.id (the rest take every
#: transaction the leader verifies with that coordinator).
TXN_ID_FILTER_SHARE = 0.5


def drawn_on(backend: str) -> bool:
    """The backend's clusters can carry faults between brokers (its wire proxy fronts those links)."""
    return backend not in CLIENT_LINKS_ONLY_BACKENDS


def fault(rnd: random.Random, base: dict[str, Any], room_s: float, coordinator_of: dict[str, str],
          partition: str, txn_id: str) -> dict[str, Any]:
    """A fault between brokers starting at ``base["at"]``: its kind, API, link and filters, aimed at
    the coordinator ``coordinator_of`` names (``{}``: the scenario's default) and the leader of
    ``partition``; ``txn_id`` is the aimed transactional.id as a filter spells it. ``room_s``: the
    seconds from its start to the run's quiet end (a drop needs ``BROKER_WAIT_S`` of them). A hold's
    timing (``hold_ms``, ``until``, its duration) is the caller's."""
    action = rnd.choices(list(ACTIONS), weights=list(ACTIONS.values()))[0]
    api = ANSWERED if action == "error-responses" else rnd.choices(list(APIS), weights=list(APIS.values()))[0]
    if action == "drop-api-responses" and room_s < BROKER_WAIT_S:
        action = "hold-requests"  # the sender's 30 s wait would outlast the run: its quiet end stays quiet
    f: dict[str, Any] = {**base, "kind": action, "api": api, "count": 1 if action == "drop-api-responses"
                         else rnd.choice([1, 1, 2, 3, 0])}
    if api == "Fetch":  # a follower's fetches from a leader: every pair of nodes replicates something
        follower, leader = rnd.sample(NODE_IDS, 2)
        return {**f, "link": f"n{follower}-to-n{leader}-internal"}
    peer_of = coordinator_of.get("of")
    if api == "WriteTxnMarkers":  # the coordinator's markers to a partition's leader (itself, maybe)
        f.update({"target": "coordinator", **coordinator_of, "peer": "leader", "peer_of": partition})
        result = rnd.choice(RESULTS)
        if result != "any":
            f["result"] = result
    else:  # the leader of a partition verifies with the coordinator
        f.update({"target": "leader", "of": partition, "peer": "coordinator",
                  **({"peer_of": peer_of} if peer_of else {})})
        if rnd.random() < TXN_ID_FILTER_SHARE:
            f["transactional_id"] = txn_id
    if rnd.random() < EPOCH_FILTER_SHARE:
        f["min_producer_epoch"] = 1
    return f


def between_brokers(f: dict[str, Any]) -> bool:
    """A drawn fault (as its scenario file holds it) acts on a link between brokers."""
    return "peer" in f or ("link" in f and not str(f["link"]).startswith("client-"))


def said(f: dict[str, Any]) -> str:
    """A drawn fault between brokers in a line (the hunt's dry run): when, what, on which link, its
    filters, e.g. ``at 12.3 s for 3.5 s: hold-requests WriteTxnMarkers 2 s, coordinator -> leader of
    hunt-in/1, result commit``."""
    ends = (f["link"] if "link" in f else
            f"{f['target']}{' of ' + f['of'] if f.get('of') else ''} -> {f['peer']}"
            f"{' of ' + f['peer_of'] if f.get('peer_of') else ''}")
    how = {"hold-requests": f"held {f.get('hold_ms', 0) / 1000:g} s", "drop-api-responses": "its response dropped",
           "error-responses": f"answered {f.get('error')}"}.get(f["kind"], f["kind"])
    count = f"{f['count']} request{'s' * (f['count'] != 1)}" if f.get("count") else "every request"
    filters = [f"{k} {f[k]}" for k in ("transactional_id", "min_producer_epoch", "result") if k in f]
    return (f"at {f['at']:g} s for {f['duration']:g} s: {f['api']} {how} ({count}), {ends}"
            + "".join(f", {x}" for x in filters))
