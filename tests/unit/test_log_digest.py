"""A log's digest (harness/base/log_digest.py) on logs shaped as real ones: a Kafka Streams client
that died of MissingSourceTopicException and logged dozens of "Closing reporter" lines after it
(issue 39: the last 12 lines were all of those), a Python traceback, a chained Java cause, and a log
with no error, where the digest shows only the last lines."""

from __future__ import annotations

from pathlib import Path

from harness.base import log_digest
from harness.base.log_digest import digest_file, digest_lines

THREAD = "wordcount-3f2a-StreamThread-1"
STREAMS_DIED = [
    "[eos-chaos] starting app-0: java -jar wordcount.jar (cwd /work/app)",
    "[main] INFO org.apache.kafka.streams.StreamsConfig - StreamsConfig values: ",
    "\tapplication.id = wordcount",
    "\tbootstrap.servers = [127.0.0.1:9092]",
    f"[{THREAD}] INFO org.apache.kafka.streams.processor.internals.StreamThread - stream-thread [{THREAD}] "
    "State transition from STARTING to PARTITIONS_REVOKED",
    f"[{THREAD}] ERROR org.apache.kafka.streams.processor.internals.StreamThread - stream-thread [{THREAD}] "
    "Encountered the following exception during processing and the registered exception handler opted to "
    "SHUTDOWN_CLIENT. The streams client is going to shut down now. ",
    "org.apache.kafka.streams.errors.MissingSourceTopicException: One or more source topics were missing during rebalance",
    "\tat org.apache.kafka.streams.processor.internals.StreamsRebalanceListener.onPartitionsAssigned("
    "StreamsRebalanceListener.java:64) ~[kafka-streams-3.9.0.jar:?]",
    "\tat org.apache.kafka.clients.consumer.internals.ConsumerRebalanceListenerInvoker.invokePartitionsAssigned("
    "ConsumerRebalanceListenerInvoker.java:65) ~[kafka-clients-3.9.0.jar:?]",
    "\tat org.apache.kafka.clients.consumer.internals.ConsumerCoordinator.onJoinComplete(ConsumerCoordinator.java:425)",
    "\tat org.apache.kafka.clients.consumer.internals.AbstractCoordinator.joinGroupIfNeeded(AbstractCoordinator.java:504)",
    "\tat org.apache.kafka.streams.processor.internals.StreamThread.run(StreamThread.java:617) [kafka-streams-3.9.0.jar:?]",
    f"[{THREAD}] INFO org.apache.kafka.streams.processor.internals.StreamThread - stream-thread [{THREAD}] "
    "State transition from PARTITIONS_ASSIGNED to PENDING_SHUTDOWN",
    *[f"[{THREAD}] INFO org.apache.kafka.common.metrics.Metrics - Closing reporter "
      "org.apache.kafka.common.metrics.JmxReporter" for _ in range(40)],
    "[wordcount-3f2a-CloseThread] ERROR org.apache.kafka.streams.KafkaStreams - stream-client [wordcount-3f2a] "
    "State transition from PENDING_ERROR to ERROR",
    *["[kafka-producer-network-thread | p] INFO org.apache.kafka.common.metrics.Metrics - Closing reporter "
      "org.apache.kafka.common.metrics.JmxReporter" for _ in range(12)],
    "[eos-chaos] app-0 exited with 1",
]


def test_a_streams_client_that_died_shows_its_exception_and_first_and_last_error_not_only_closing_lines() -> None:
    d = digest_lines(STREAMS_DIED)
    assert all("Closing reporter" in line for line in d.tail[-12:-1])  # what the old message showed
    assert d.exception_count == 1
    assert d.exceptions == [[
        "org.apache.kafka.streams.errors.MissingSourceTopicException: One or more source topics were missing during rebalance",
        "at org.apache.kafka.streams.processor.internals.StreamsRebalanceListener.onPartitionsAssigned("
        "StreamsRebalanceListener.java:64) ~[kafka-streams-3.9.0.jar:?]",
        "at org.apache.kafka.clients.consumer.internals.ConsumerRebalanceListenerInvoker.invokePartitionsAssigned("
        "ConsumerRebalanceListenerInvoker.java:65) ~[kafka-clients-3.9.0.jar:?]",
        "at org.apache.kafka.clients.consumer.internals.ConsumerCoordinator.onJoinComplete(ConsumerCoordinator.java:425)",
    ]]
    assert d.error_count == 2
    assert d.first_error is not None and "Encountered the following exception" in d.first_error
    assert d.last_error is not None and "PENDING_ERROR to ERROR" in d.last_error
    assert d.headline() == d.exceptions[0][0]
    text = d.text()
    assert "MissingSourceTopicException" in text and "PENDING_ERROR to ERROR" in text
    assert text.index("MissingSourceTopicException") < text.index("Closing reporter")  # the cause first
    assert "[eos-chaos]" not in (d.first_error or "")  # the wrapper's own lines are never the app's error
    assert d.lines == len(STREAMS_DIED)


PY_DIED = [
    "[eos-chaos] starting app-0: python app.py (cwd /tmp/x)",
    "connecting to 127.0.0.1:9092",
    "Traceback (most recent call last):",
    '  File "/tmp/x/app.py", line 30, in <module>',
    "    main()",
    '  File "/tmp/x/app.py", line 12, in main',
    "    topic = os.environ['APP_TOPIC']",
    "            ~~~~~~~~~~^^^^^^^^^^^^^",
    '  File "<frozen os>", line 679, in __getitem__',
    "KeyError: 'APP_TOPIC'",
    *["Closing reporter org.apache.kafka.common.metrics.JmxReporter" for _ in range(50)],
    "[eos-chaos] app-0 exited with 1",
]


def test_a_python_traceback_gives_its_last_line_and_innermost_frame() -> None:
    d = digest_lines(PY_DIED)
    assert d.exceptions == [["Traceback (most recent call last):", 'File "<frozen os>", line 679, in __getitem__',
                             "KeyError: 'APP_TOPIC'"]]
    assert d.headline() == "KeyError: 'APP_TOPIC'"
    assert d.error_count == 0 and d.first_error is None
    assert "KeyError: 'APP_TOPIC'" in d.text()


def test_of_chained_tracebacks_the_first_and_the_last_are_kept() -> None:
    block = ["Traceback (most recent call last):", '  File "a.py", line 1, in f', "    g()"]
    d = digest_lines([*block, "ValueError: first", "", "During handling of the above exception, another exception occurred:",
                      "", *block, "RuntimeError: second", "", "The above", "", *block, "SystemExit: third"])
    assert d.exception_count == 3
    assert [e[-1] for e in d.exceptions] == ["ValueError: first", "SystemExit: third"]
    assert "the first exception of 3" in d.text() and "the last exception of 3" in d.text()


def test_a_java_cause_chain_keeps_each_cause_with_its_first_frame() -> None:
    d = digest_lines([
        'Exception in thread "main" org.apache.kafka.common.KafkaException: Failed to construct kafka producer',
        "\tat org.apache.kafka.clients.producer.KafkaProducer.<init>(KafkaProducer.java:473)",
        "\tat org.apache.kafka.clients.producer.KafkaProducer.<init>(KafkaProducer.java:290)",
        "\tat org.apache.kafka.clients.producer.KafkaProducer.<init>(KafkaProducer.java:317)",
        "\tat org.apache.kafka.clients.producer.KafkaProducer.<init>(KafkaProducer.java:302)",
        "\tat my.App.main(App.java:20)",
        "Caused by: org.apache.kafka.common.config.ConfigException: Invalid url in bootstrap.servers: nowhere",
        "\tat org.apache.kafka.clients.ClientUtils.parseAndValidateAddresses(ClientUtils.java:59)",
        "\tat org.apache.kafka.clients.ClientUtils.parseAndValidateAddresses(ClientUtils.java:48)",
        "\t... 5 more",
    ])
    (exc,) = d.exceptions
    assert exc[0].endswith("KafkaException: Failed to construct kafka producer")
    assert len([x for x in exc if x.startswith("at ")]) == 4  # 3 under the header, 1 under the cause
    assert "Caused by: org.apache.kafka.common.config.ConfigException: Invalid url in bootstrap.servers: nowhere" in exc
    assert not any("more" in x for x in exc)


def test_a_log_with_no_error_shows_only_its_last_lines(tmp_path: Path) -> None:
    lines = [f"[main] INFO my.App - processed batch {i}" for i in range(100)]
    d = digest_lines(lines)
    assert not d.failed and d.exceptions == [] and d.headline() is None
    assert d.tail == lines[-log_digest.TAIL_LINES:]
    assert d.lines_out() == [f"its last {log_digest.TAIL_LINES} lines (of 100):", *[f"  {x}" for x in d.tail]]
    # words that are not a level do not count: an app may log the word "error" in its own messages
    assert not digest_lines(["processed 0 errors", "ERRORS: none", "errorHandler=LogAndContinue",
                             "TimeoutException is retriable"]).failed


def test_a_file_is_read_and_a_missing_one_says_so(tmp_path: Path) -> None:
    log = tmp_path / "app-0.log"
    log.write_text("\n".join(STREAMS_DIED) + "\n")
    d = digest_file(log)
    assert not isinstance(d, str) and d.exception_count == 1
    assert "MissingSourceTopicException" in log_digest.describe(log)
    assert log_digest.describe(tmp_path / "nope.log").strip().startswith("(unreadable: ")
    assert log_digest.describe(None).strip() == "(no log)"
    empty = tmp_path / "empty.log"
    empty.write_text("")
    assert "it is empty" in log_digest.describe(empty)


def test_a_long_line_is_cut() -> None:
    d = digest_lines(["ERROR " + "x" * 10_000])
    assert d.first_error is not None and len(d.first_error) <= log_digest.LINE_CHARS + 4


#: A PySpark job whose foreachBatch function raised: the Java error carries the Python traceback in
#: its message (cut here to the lines that matter), and the driver's own traceback carries it again.
PYSPARK_DIED = [
    "26/11/28 20:42:19 ERROR MicroBatchExecution: Query [id = f8d0, runId = 073e] terminated with error",
    "org.apache.spark.sql.execution.streaming.sources.ForeachBatchUserFuncException: [FOREACH_BATCH_USER_FUNCTION_ERROR] "
    "An error occurred in the user provided function in foreach batch sink. Reason: An exception was raised by the "
    "Python Proxy. Return Message: Traceback (most recent call last):",
    '  File "/venv/lib/python3.11/site-packages/py4j/clientserver.py", line 644, in _call_proxy',
    "    return_value = getattr(self.pool[obj_id], method)(*params)",
    '  File "/work/job/spark_copier.py", line 157, in write',
    '    p.produce(self.a.output, key=r["key"], value=r["value"])',
    "TypeError: argument 2 must be read-only bytes-like object, not bytearray",
    " SQLSTATE: 39000",
    "\tat org.apache.spark.sql.execution.streaming.sources.ForeachBatchSink.callBatchWriter(ForeachBatchSink.scala:60)",
    "\tat org.apache.spark.sql.execution.streaming.sources.ForeachBatchSink.addBatch(ForeachBatchSink.scala:49)",
    "Caused by: py4j.Py4JException: An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):",
    '  File "/work/job/spark_copier.py", line 157, in write',
    "TypeError: argument 2 must be read-only bytes-like object, not bytearray",
    "",
    "\tat py4j.Protocol.getReturnValue(Protocol.java:476)",
    "\t... 34 more",
    "Traceback (most recent call last):",
    '  File "/work/job/spark_copier.py", line 212, in <module>',
    "    main()",
    '  File "/venv/lib/python3.11/site-packages/pyspark/errors/exceptions/captured.py", line 288, in deco',
    "    raise converted from None",
    "pyspark.errors.exceptions.captured.StreamingQueryException: [STREAM_FAILED] Query [id = f8d0] terminated with "
    "exception: [FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function in foreach batch "
    "sink. Reason: An exception was raised by the Python Proxy. Return Message: " + "x" * 300 + " Traceback (most recent call last):",
    '  File "/work/job/spark_copier.py", line 157, in write',
    '    p.produce(self.a.output, key=r["key"], value=r["value"])',
    "TypeError: argument 2 must be read-only bytes-like object, not bytearray",
    " SQLSTATE: 39000 SQLSTATE: XXKST",
    "=== Streaming Query ===",
    "Current Committed Offsets: {}",
    "[eos-chaos] app-0 exited with 1",
]


def test_the_python_error_a_pyspark_exception_carries_in_its_message_is_shown() -> None:
    """The error that matters is the user's Python one, inside the Java error's message and inside
    the driver's own traceback (whose line is longer than a digest keeps)."""
    d = digest_lines(PYSPARK_DIED)
    assert d.exception_count == 2
    java, py = d.exceptions
    cause = "TypeError: argument 2 must be read-only bytes-like object, not bytearray"
    assert java[0].startswith("org.apache.spark.sql.execution.streaming.sources.ForeachBatchUserFuncException")
    assert java[1:3] == ['File "/work/job/spark_copier.py", line 157, in write', cause], java
    assert java[3].startswith("at org.apache.spark.sql.execution.streaming.sources.ForeachBatchSink.callBatchWriter")
    assert java[-3:] == ['File "/work/job/spark_copier.py", line 157, in write', cause,  # its cause's too
                         "at py4j.Protocol.getReturnValue(Protocol.java:476)"], java
    assert py[-1] == cause and d.headline() == cause
    assert "=== Streaming Query ===" not in [x for e in d.exceptions for x in e]
