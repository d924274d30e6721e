package eoschaos.apps;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shipped Kafka Streams app of eos-chaos (docs/APPS.md, "The shipped apps"): reads String keys
 * and decimal integer values (UTF-8 text) from one topic, repartitions them by key through an
 * internal topic, and writes per key the running count of its records to one topic and the running
 * sum of their values to another (String keys, 8-byte big-endian Long values). Record caches are off,
 * so every input emits one update of each. Under exactly_once_v2 both are exact whatever is killed;
 * under at_least_once (a 30 s commit interval) a killed instance's uncommitted input is counted
 * again after its restart: the negative control.
 */
public final class StreamsCountSum {
    private static final Logger LOG = LoggerFactory.getLogger(StreamsCountSum.class);
    private static final String USAGE = String.join("\n",
        "usage: streams-count-sum --bootstrap HOST:PORT[,...] --input TOPIC --count-topic TOPIC --sum-topic TOPIC",
        "                         --application-id ID --state-dir DIR [--guarantee exactly_once_v2|at_least_once]",
        "                         [--threads N]");
    private static final List<String> REQUIRED =
        List.of("--bootstrap", "--input", "--count-topic", "--sum-topic", "--application-id", "--state-dir");
    private static final List<String> OPTIONAL = List.of("--guarantee", "--threads");
    private static final List<String> GUARANTEES =
        List.of(StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE);
    /** How long a SIGTERM waits for the clean close (the harness's own stop waits longer). */
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);

    private StreamsCountSum() {
    }

    public static void main(final String[] args) {
        final Map<String, String> flags = parse(args);
        final KafkaStreams streams = new KafkaStreams(topology(flags), config(flags));
        final CountDownLatch closed = new CountDownLatch(1);
        // A stream thread that dies of an exception (a fenced producer, a timeout under a fault) is
        // replaced, as a production app would be configured; the client itself keeps running.
        streams.setUncaughtExceptionHandler(e -> {
            LOG.error("stream thread died; replacing it", e);
            return StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.ERROR) {
                LOG.error("Kafka Streams is in state ERROR; exiting");
                closed.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            LOG.info("shutting down: closing Kafka Streams (at most {} s)", CLOSE_TIMEOUT.toSeconds());
            final boolean clean = streams.close(CLOSE_TIMEOUT);
            LOG.info(clean ? "closed cleanly" : "close timed out");
            closed.countDown();
        }, "streams-count-sum-shutdown"));
        streams.start();
        try {
            closed.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (streams.state() == KafkaStreams.State.ERROR) {
            System.exit(1);
        }
    }

    static Topology topology(final Map<String, String> flags) {
        final StreamsBuilder builder = new StreamsBuilder();
        final KGroupedStream<String, String> byKey = builder
            .stream(flags.get("--input"), Consumed.with(Serdes.String(), Serdes.String()))
            .repartition(Repartitioned.with(Serdes.String(), Serdes.String()).withName("by-key"))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        byKey.count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .to(flags.get("--count-topic"), Produced.with(Serdes.String(), Serdes.Long()));
        byKey.aggregate(() -> 0L, (key, value, sum) -> sum + integer(key, value),
                Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("sums")
                    .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .to(flags.get("--sum-topic"), Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    /** A value as an integer; one that is not adds nothing (said once per record) rather than
     *  killing the stream thread over and over on the same record. */
    private static long integer(final String key, final String value) {
        try {
            return Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            LOG.warn("key {}: value {} is not a decimal integer; it adds 0 to the sum", key, value);
            return 0L;
        }
    }

    static Properties config(final Map<String, String> flags) {
        final Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, flags.get("--application-id"));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, flags.get("--bootstrap"));
        p.put(StreamsConfig.STATE_DIR_CONFIG, flags.get("--state-dir"));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, flags.get("--guarantee"));
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, flags.get("--threads"));
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
        // every update is emitted (no record cache to fold several into one)
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        // The input's aborted transactions are never counted, whatever the guarantee: at_least_once
        // would otherwise read them (its default is read_uncommitted), and the negative control is
        // about what a kill does, not about that. exactly_once_v2 sets read_committed itself.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.ISOLATION_LEVEL_CONFIG), "read_committed");
        // A killed instance's tasks wait for its group session to time out before they move: 10 s,
        // not the default 45 s, so a run under kills spends its time processing, not waiting.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10_000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 2_000);
        return p;
    }

    /** The flags (each ``--name value``), with the defaults; usage and exit 2 on anything else. */
    static Map<String, String> parse(final String[] args) {
        final Map<String, String> flags = new LinkedHashMap<>();
        flags.put("--guarantee", StreamsConfig.EXACTLY_ONCE_V2);
        flags.put("--threads", "1");
        for (int i = 0; i < args.length; i += 2) {
            final String name = args[i];
            if (name.equals("-h") || name.equals("--help")) {
                System.out.println(USAGE);
                System.exit(0);
            }
            if (!REQUIRED.contains(name) && !OPTIONAL.contains(name)) {
                usage("unknown argument " + name);
            }
            if (i + 1 >= args.length || args[i + 1].isEmpty()) {
                usage(name + " needs a value");
            }
            flags.put(name, args[i + 1]);
        }
        for (final String name : REQUIRED) {
            if (!flags.containsKey(name)) {
                usage("the flag " + name + " is required");
            }
        }
        if (!GUARANTEES.contains(flags.get("--guarantee"))) {
            usage("--guarantee " + flags.get("--guarantee") + ": expected one of " + String.join(", ", GUARANTEES));
        }
        try {
            if (Integer.parseInt(flags.get("--threads")) < 1) {
                usage("--threads " + flags.get("--threads") + ": expected an integer of 1 or more");
            }
        } catch (NumberFormatException e) {
            usage("--threads " + flags.get("--threads") + ": expected an integer of 1 or more");
        }
        return flags;
    }

    private static void usage(final String problem) {
        System.err.println(USAGE);
        System.err.println("streams-count-sum: error: " + problem);
        System.exit(2);
    }
}
