import json

from clusters.kafka.health import Health, QuorumView, raft_leader, read_quorum_state


def test_raft_leader_needs_a_majority_at_the_newest_epoch():
    v = QuorumView
    assert raft_leader([v(1, 2, 5), v(2, 2, 5), v(3, 2, 5)], 3) == 2
    assert raft_leader([v(1, 2, 5), v(2, 2, 5)], 3) == 2  # one node down
    assert raft_leader([v(1, 2, 5)], 3) is None  # a minority cannot tell
    assert raft_leader([v(1, 2, 5), v(2, 3, 6), v(3, 3, 6)], 3) == 3  # stale view ignored
    assert raft_leader([v(1, None, 7), v(2, None, 7), v(3, 1, 6)], 3) is None  # election under way
    assert raft_leader([], 3) is None


def test_read_quorum_state(tmp_path):
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    (d / "quorum-state").write_text(json.dumps({"leaderId": 3, "leaderEpoch": 4, "votedId": -1, "data_version": 1}))
    assert read_quorum_state(1, tmp_path) == QuorumView(1, 3, 4)
    (d / "quorum-state").write_text(json.dumps({"leaderId": -1, "leaderEpoch": 5}))
    assert read_quorum_state(1, tmp_path) == QuorumView(1, None, 5)
    assert read_quorum_state(1, tmp_path / "missing") is None


def test_health_ok_only_when_everything_is():
    good = Health(brokers=[1, 2, 3], expected=[1, 2, 3], raft_leader=1)
    assert good.ok
    assert not Health(brokers=[1, 2], expected=[1, 2, 3], raft_leader=1).ok
    assert not Health(brokers=[1, 2, 3], expected=[1, 2, 3], raft_leader=None).ok
    urp = Health(brokers=[1, 2, 3], expected=[1, 2, 3], raft_leader=1, under_replicated=["t-0 isr [1, 2] of [1, 2, 3]"])
    assert not urp.ok and "t-0" in urp.describe()
    assert not Health(brokers=[1, 2, 3], expected=[1, 2, 3], raft_leader=1, error="timeout").ok
