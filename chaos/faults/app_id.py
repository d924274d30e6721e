"""``{id}`` in a fault's transactional.id: the run's id of the scenario's app, known only when the
run starts (the default prefix of the app's transactions, ``{id}*``). ``bump-producer-epoch``'s
``of: "{id}-0-0-0"`` names a Flink sink's id; a wire fault's ``transactional_id: "{id}*"`` names every
id of a Kafka Streams app (its application.id, then a process id it draws)."""

from __future__ import annotations

from chaos.targets import TargetDefaults

#: In a transactional.id, the run's id of the scenario's app (``{id}`` in its command).
APP_ID = "{id}"


def with_app_id(txn_id: str, defaults: TargetDefaults, kind: str) -> str:
    """``txn_id`` with ``{id}`` replaced by the run's app id. ``LookupError`` when it has one and the
    run has no app (``kind`` names the fault in the message)."""
    if APP_ID not in txn_id:
        return txn_id
    default = defaults.transactional_id
    if default is None or not default.endswith("*"):
        raise LookupError(f"{kind} of {txn_id!r}: {APP_ID} is an app's id, and the run has no app")
    return txn_id.replace(APP_ID, default[:-1])
