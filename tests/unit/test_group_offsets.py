"""A group's committed offsets when its coordinator has just moved (harness/kafka/group_offsets.py),
on librdkafka's own mock cluster (no Kafka): the coordinator's first answers to OffsetFetch are
``NOT_COORDINATOR`` and ``COORDINATOR_NOT_AVAILABLE``, injected through the mock's C API.

The admin client's ``list_consumer_group_offsets`` takes the process down with SIGSEGV on that answer
(the cause of ``bench app``'s crash, and a risk to every run's drain); ``GroupOffsets`` asks again and
gets the offsets. Each runs in a child process, since the one crashes."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE = 16, 15

#: a mock cluster of librdkafka's (the library confluent-kafka bundles, reached through ctypes),
#: topics t, g-count-repartition and other with 2 partitions each, group g's offsets committed on
#: t-0 (7), g-count-repartition-1 (3) and other-0 (2), then OffsetFetch answered
#: with ``ERRORS`` before it answers as it should; ``ASK`` is then run and prints what it got
CHILD = textwrap.dedent("""
    import ctypes, glob, os, sys
    import confluent_kafka
    from confluent_kafka import Consumer, TopicPartition
    so = glob.glob(os.path.join(os.path.dirname(confluent_kafka.__file__), "..", "confluent_kafka.libs", "librdkafka*.so*"))
    lib = ctypes.CDLL(so[0]) if so else ctypes.CDLL("librdkafka.so.1")
    lib.rd_kafka_conf_new.restype = ctypes.c_void_p
    lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
    lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    lib.rd_kafka_mock_push_request_errors_array.argtypes = [ctypes.c_void_p, ctypes.c_int16, ctypes.c_size_t,
                                                            ctypes.POINTER(ctypes.c_int)]
    conf = lib.rd_kafka_conf_new()
    err = ctypes.create_string_buffer(512)
    lib.rd_kafka_conf_set(conf, b"log_level", b"0", err, 512)  # the holder of the mock cluster stays quiet
    rk = lib.rd_kafka_new(0, conf, err, 512)
    mock = lib.rd_kafka_mock_cluster_new(rk, 1)
    bootstrap = lib.rd_kafka_mock_cluster_bootstraps(mock).decode()
    for topic in (b"t", b"g-count-repartition", b"other"):
        lib.rd_kafka_mock_topic_create(mock, topic, 2, 1)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition("t", 0, 7), TopicPartition("g-count-repartition", 1, 3), TopicPartition("other", 0, 2)],
             asynchronous=False)
    c.close()
    errors = [int(e) for e in sys.argv[1].split(",")]
    OFFSET_FETCH = 9
    lib.rd_kafka_mock_push_request_errors_array(mock, OFFSET_FETCH, len(errors), (ctypes.c_int * len(errors))(*errors))
    print("asking", flush=True)
""")

ADMIN = CHILD + textwrap.dedent("""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from clusters.kafka.health import admin_client
    admin = admin_client(bootstrap)
    req = ConsumerGroupTopicPartitions("g", [TopicPartition("t", 0), TopicPartition("t", 1)])
    res = admin.list_consumer_group_offsets([req])["g"].result(timeout=20)
    print(sorted((tp.topic, tp.partition, tp.offset) for tp in res.topic_partitions if tp.offset >= 0), flush=True)
""")

OURS = CHILD + textwrap.dedent("""
    from harness.kafka.group_offsets import GroupOffsets
    with GroupOffsets(bootstrap, "g") as offsets:
        print(sorted(offsets.committed([TopicPartition("t", 0), TopicPartition("t", 1)], 20).items()), flush=True)
""")

DRAIN = CHILD + textwrap.dedent("""
    from harness.phases.app_drain import DrainProbe
    with DrainProbe(bootstrap) as probe:
        print(probe.group_lag("g", [TopicPartition("t", 0), TopicPartition("t", 1)]), flush=True)
""")


def _child(code: str, errors: list[int]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, ",".join(map(str, errors))], capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("error", [NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE])
def test_a_moved_coordinator_s_answer_is_asked_again_and_the_offsets_come(error: int) -> None:
    p = _child(OURS, [error, error])
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[-1] == "[(('t', 0), 7)]"


def test_the_admin_client_s_offsets_call_dies_of_that_answer() -> None:
    """Why ``GroupOffsets`` exists: should a librdkafka release mend this, this test says so, and the
    admin client may serve again."""
    p = _child(ADMIN, [NOT_COORDINATOR])
    assert p.stdout.splitlines() == ["asking"], p.stdout + p.stderr
    assert p.returncode == -signal.SIGSEGV


def test_with_no_error_both_ways_give_the_same_offsets() -> None:
    ours, admin = _child(OURS, [0]), _child(ADMIN, [0])
    assert (ours.returncode, admin.returncode) == (0, 0), ours.stderr + admin.stderr
    assert ours.stdout.splitlines()[-1] == "[(('t', 0), 7)]"
    assert admin.stdout.splitlines()[-1] == "[('t', 0, 7)]"


def test_the_drain_asks_the_inputs_and_the_topics_named_after_the_group_through_a_moving_coordinator() -> None:
    """A Streams app's repartition topics (``<application.id>-...``) are its group's too; a topic of
    another name is not the app's (its inputs are declared). Every partition asked is in the lag, the
    inputs' as 0 when the group committed none; nothing lies past the offsets of the empty topics."""
    p = _child(DRAIN, [NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE])
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[-1] == str({"g-count-repartition-1": False, "t-0": False, "t-1": False})
