package eoschaos.apps;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the shipped Kafka Streams apps share (docs/APPS.md, "The shipped apps"): their flags (each
 * {@code --name value}; usage and exit 2 on anything else), the configuration every one of them runs
 * with, and the run itself (a dead stream thread replaced, SIGTERM closes, a client in ERROR exits 1).
 */
final class StreamsApp {
    private static final Logger LOG = LoggerFactory.getLogger(StreamsApp.class);
    static final List<String> GUARANTEES = List.of(StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE);
    /** The default of an optional flag that Streams' own default stands for (not passed on). */
    static final String DEFAULT = "default";
    /** How long a SIGTERM waits for the clean close (the harness's own stop waits longer). */
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);

    /** An app's name (for messages), usage text and flags: required ones, and optional ones with their defaults. */
    record Spec(String name, String usage, List<String> required, Map<String, String> defaults) {
    }

    private StreamsApp() {
    }

    /** The flags of {@code args} with the defaults filled in; usage and exit 2 on an unknown flag, a
     *  missing value or required flag, or a {@code --guarantee} that is not one of {@link #GUARANTEES}. */
    static Map<String, String> parse(final Spec spec, final String[] args) {
        final Map<String, String> flags = new LinkedHashMap<>(spec.defaults());
        for (int i = 0; i < args.length; i += 2) {
            final String name = args[i];
            if (name.equals("-h") || name.equals("--help")) {
                System.out.println(spec.usage());
                System.exit(0);
            }
            if (!spec.required().contains(name) && !spec.defaults().containsKey(name)) {
                usage(spec, "unknown argument " + name);
            }
            if (i + 1 >= args.length || args[i + 1].isEmpty()) {
                usage(spec, name + " needs a value");
            }
            flags.put(name, args[i + 1]);
        }
        for (final String name : spec.required()) {
            if (!flags.containsKey(name)) {
                usage(spec, "the flag " + name + " is required");
            }
        }
        if (flags.containsKey("--guarantee") && !GUARANTEES.contains(flags.get("--guarantee"))) {
            usage(spec, "--guarantee " + flags.get("--guarantee") + ": expected one of " + String.join(", ", GUARANTEES));
        }
        if (flags.containsKey("--commit-interval-ms")) {
            if (flags.get("--commit-interval-ms").equals(DEFAULT)) {
                flags.remove("--commit-interval-ms");  // Streams' default for the guarantee
            } else {
                atLeast(spec, flags, "--commit-interval-ms", 1);
            }
        }
        return flags;
    }

    /** Flag {@code name} as an integer of at least {@code min}; usage and exit 2 if it is not one. */
    static long atLeast(final Spec spec, final Map<String, String> flags, final String name, final long min) {
        try {
            final long n = Long.parseLong(flags.get(name));
            if (n >= min) {
                return n;
            }
        } catch (NumberFormatException e) {
            // said below
        }
        usage(spec, name + " " + flags.get(name) + ": expected an integer of " + min + " or more");
        return min;
    }

    static void usage(final Spec spec, final String problem) {
        System.err.println(spec.usage());
        System.err.println(spec.name() + ": error: " + problem);
        System.exit(2);
    }

    /**
     * The configuration every shipped app runs with, from the flags {@code --application-id},
     * {@code --bootstrap}, {@code --state-dir}, {@code --guarantee} (and {@code --threads} when given).
     * Record caches are off (one update per input), internal topics have replication factor 3, the input
     * is read from the earliest offset; with {@code readCommitted}, read_committed under either guarantee.
     */
    static Properties config(final Map<String, String> flags, final boolean readCommitted) {
        final Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, flags.get("--application-id"));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, flags.get("--bootstrap"));
        p.put(StreamsConfig.STATE_DIR_CONFIG, flags.get("--state-dir"));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, flags.get("--guarantee"));
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, flags.getOrDefault("--threads", "1"));
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
        // every update is emitted (no record cache to fold several into one)
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        if (readCommitted) {
            // The input's aborted transactions are never processed, whatever the guarantee: at_least_once
            // would otherwise read them (its default is read_uncommitted), and a negative control on it is
            // about what a kill does, not about that. exactly_once_v2 sets read_committed itself.
            p.put(StreamsConfig.consumerPrefix(ConsumerConfig.ISOLATION_LEVEL_CONFIG), "read_committed");
        }
        if (flags.containsKey("--commit-interval-ms")) {
            p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, flags.get("--commit-interval-ms"));
        }
        // A killed instance's tasks wait for its group session to time out before they move: 10 s,
        // not the default 45 s, so a run under kills spends its time processing, not waiting.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10_000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 2_000);
        return p;
    }

    /** Runs {@code topology} until SIGTERM (a clean close, then the JVM's exit) or the client's ERROR (exit 1). */
    static void run(final String name, final Topology topology, final Properties config) {
        LOG.info("{}: {}", name, topology.describe());
        final KafkaStreams streams = new KafkaStreams(topology, config);
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
        }, name + "-shutdown"));
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
}
