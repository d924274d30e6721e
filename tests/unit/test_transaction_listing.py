"""The listing of an app's transactions (chaos/targets.py ``_listed``) asks each broker on its own
and again until it answers: a broker a fault killed (refused connections) or one still loading its
coordinators must not fail the fault that asked (the hunt's ``hold-requests failed:
KafkaConnectionError: 111 ECONNREFUSED``), and the coordinator lookup of an app's ids goes on with
the brokers that did answer."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kafka.errors import KafkaConnectionError

from chaos import targets
from harness.base.errors import WaitTimeout


class FakeAdmin:
    """kafka-python's admin client as the listing uses it: broker 2 refuses its first ``refusals``
    questions (all of them when None); brokers 1 and 3 coordinate one app id each."""

    made = 0
    refusals: int | None = 2
    ids = {1: "app.b-0", 2: "app.a-0", 3: "app.c-0"}

    def __init__(self, **_: Any) -> None:
        type(self).made += 1

    def describe_cluster(self) -> dict[str, Any]:
        return {"brokers": [{"broker_id": n} for n in self.ids]}

    def list_transactions(self, broker_ids: list[int], **_: Any) -> dict[int, list[Any]]:
        (broker,) = broker_ids
        if broker == 2 and (FakeAdmin.refusals is None or FakeAdmin.refusals > 0):
            if FakeAdmin.refusals is not None:
                FakeAdmin.refusals -= 1
            raise KafkaConnectionError("111 ECONNREFUSED")
        return {broker: [SimpleNamespace(transactional_id=self.ids[broker], state="Ongoing"),
                         SimpleNamespace(transactional_id=f"other-{broker}", state="Ongoing")]}

    def close(self) -> None:
        pass


@pytest.fixture
def fake_admin(monkeypatch: pytest.MonkeyPatch) -> type[FakeAdmin]:
    import kafka.admin

    monkeypatch.setattr(kafka.admin, "KafkaAdminClient", FakeAdmin)
    monkeypatch.setattr(targets, "LISTING_DEADLINE_S", 1.5)
    FakeAdmin.made, FakeAdmin.refusals = 0, 2
    return FakeAdmin


def test_a_broker_refusing_for_a_while_is_asked_again_and_the_others_are_kept(fake_admin: type[FakeAdmin]) -> None:
    assert targets.transaction_states("127.0.0.1:1", "app.") == {"app.a-0": "Ongoing", "app.b-0": "Ongoing",
                                                                 "app.c-0": "Ongoing"}
    assert fake_admin.made == 1, "a refused connection to one broker needs no new client"
    assert targets.prefixed_transaction_coordinator("127.0.0.1:1", "app.") == 2  # app.a-0's, once 2 answered


def test_a_broker_that_never_answers_leaves_the_others_listing_for_the_coordinator_and_a_timeout_for_the_rest(
        fake_admin: type[FakeAdmin]) -> None:
    fake_admin.refusals = None
    assert targets.prefixed_transaction_coordinator("127.0.0.1:1", "app.") == 1  # app.b-0: the first listed
    with pytest.raises(WaitTimeout, match=r"brokers \[2\] of \[1, 2, 3\] not answered"):
        targets.open_transactions("127.0.0.1:1", "app.", 1000)
