package eoschaos.apps;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.sink.TransactionNamingStrategy;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shipped Flink job of eos-chaos (docs/APPS.md, "flink-job"; docs/FLINK.md): a KafkaSource
 * (read_committed) whose every record is written by a KafkaSink to the output topic with the same
 * key and the value with ":flink" appended. It runs in this JVM on a MiniCluster (a local
 * environment), checkpoints every --checkpoint-ms to --state-dir (retained), and on start resumes
 * from the newest retained checkpoint or savepoint there: a kill -9 of the JVM and a start of the
 * same command behave as a job's restart from its last checkpoint. SIGTERM stops the job with a
 * savepoint (its transactions committed, none left open) and exits.
 */
public final class FlinkSuffixJob {
    private static final Logger LOG = LoggerFactory.getLogger(FlinkSuffixJob.class);
    /** What is appended to every value (harness/apps/functions.py: FLINK_SUFFIX). */
    static final String SUFFIX = ":flink";
    private static final String USAGE = String.join("\n",
        "usage: flink-job --bootstrap HOST:PORT[,...] --input TOPIC --output TOPIC --group ID",
        "                 --transactional-id-prefix PREFIX --state-dir DIR",
        "                 [--guarantee exactly_once|at_least_once] [--parallelism N] [--restored-parallelism N[,N...]]",
        "                 [--naming incrementing|pooling] [--checkpoint-ms MS] [--transaction-timeout-ms MS]");
    private static final List<String> REQUIRED =
        List.of("--bootstrap", "--input", "--output", "--group", "--transactional-id-prefix", "--state-dir");
    private static final Map<String, String> DEFAULTS = defaults();
    /** How long a SIGTERM's stop-with-savepoint may take (the harness's own stop waits longer). */
    private static final long STOP_TIMEOUT_S = 30;

    private FlinkSuffixJob() {
    }

    private static Map<String, String> defaults() {
        final Map<String, String> d = new LinkedHashMap<>();
        d.put("--guarantee", "exactly_once");
        d.put("--parallelism", "1");
        d.put("--restored-parallelism", "");
        d.put("--naming", "incrementing");
        d.put("--checkpoint-ms", "1000");
        d.put("--transaction-timeout-ms", "60000");
        return d;
    }

    /** A record as read: key and value as UTF-8 text, either null. A POJO (its serializer takes nulls). */
    public static final class Rec {
        public String key;
        public String value;

        public Rec() {
        }

        public Rec(final String key, final String value) {
            this.key = key;
            this.value = value;
        }
    }

    public static void main(final String[] args) throws Exception {
        final Map<String, String> flags = parse(args);
        final Path state = Paths.get(flags.get("--state-dir")).toAbsolutePath();
        final Optional<Path> restore = latestRetained(state);
        final int parallelism = parallelism(flags, state, restore.isPresent());
        final Configuration conf = config(flags, state, restore, parallelism);
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(parallelism, conf);
        env.fromSource(source(flags), WatermarkStrategy.noWatermarks(), "input")
            .map(r -> new Rec(r.key, (r.value == null ? "" : r.value) + SUFFIX))
            .returns(Rec.class).name("suffix")
            .sinkTo(sink(flags)).name("output");
        LOG.info("flink-job: starting, parallelism {}, {}, guarantee {}, naming {}", parallelism,
            restore.map(p -> "restoring from " + p).orElse("no retained checkpoint: from the earliest offsets"),
            flags.get("--guarantee"), flags.get("--naming"));
        final JobClient job = env.executeAsync("flink-job " + flags.get("--group"));
        final Thread hook = new Thread(() -> stop(job, state), "flink-job-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            job.getJobExecutionResult().get();
            LOG.error("flink-job: the job ended by itself; exiting 1");
        } catch (Exception e) {
            if (STOPPING) {
                return;  // the shutdown hook's stop ended it: the JVM exits when the hook returns
            }
            LOG.error("flink-job: the job failed for good; exiting 1", e);
        }
        if (!STOPPING) {
            System.exit(1);
        }
    }

    private static volatile boolean STOPPING;

    /** --parallelism on a fresh start; on a restore, the next of --restored-parallelism's list (cycled,
     *  counted in the state folder's file "restores"), or --parallelism without one. */
    static int parallelism(final Map<String, String> flags, final Path state, final boolean restoring)
            throws IOException {
        final String[] cycle = flags.get("--restored-parallelism").split(",");
        if (!restoring || flags.get("--restored-parallelism").isEmpty()) {
            return Integer.parseInt(flags.get("--parallelism"));
        }
        final Path counter = state.resolve("restores");
        final int done = Files.exists(counter) ? Integer.parseInt(Files.readString(counter).trim()) : 0;
        Files.writeString(counter, Integer.toString(done + 1));
        return Integer.parseInt(cycle[done % cycle.length]);
    }

    /** SIGTERM: stop with a savepoint (the sink commits what it wrote, nothing stays open). */
    private static void stop(final JobClient job, final Path state) {
        STOPPING = true;
        LOG.info("flink-job: SIGTERM: stopping with a savepoint (at most {} s)", STOP_TIMEOUT_S);
        try {
            final String path = job.stopWithSavepoint(false, state.resolve("savepoints").toUri().toString(),
                SavepointFormatType.CANONICAL).get(STOP_TIMEOUT_S, TimeUnit.SECONDS);
            LOG.info("flink-job: stopped; savepoint {}", path);
        } catch (Exception e) {
            LOG.warn("flink-job: stop with savepoint failed: {}", e.toString());
        }
    }

    /** The newest retained checkpoint or savepoint under ``state`` (a folder with a ``_metadata``, the
     *  file Flink writes last): by the time it was written. A folder whose _metadata is missing was not
     *  completed. */
    static Optional<Path> latestRetained(final Path state) throws IOException {
        if (!Files.isDirectory(state)) {
            return Optional.empty();
        }
        try (Stream<Path> files = Files.walk(state, 4)) {
            return files.filter(p -> p.getFileName().toString().equals("_metadata") && Files.isRegularFile(p))
                .max(Comparator.comparingLong(FlinkSuffixJob::modified))
                .map(Path::getParent);
        }
    }

    private static long modified(final Path p) {
        try {
            return Files.getLastModifiedTime(p).to(TimeUnit.NANOSECONDS);
        } catch (IOException e) {
            return Long.MIN_VALUE;
        }
    }

    static Configuration config(final Map<String, String> flags, final Path state, final Optional<Path> restore,
                                final int parallelism) {
        final Configuration c = new Configuration();
        c.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofMillis(Long.parseLong(flags.get("--checkpoint-ms"))));
        c.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, state.resolve("checkpoints").toUri().toString());
        c.set(CheckpointingOptions.SAVEPOINT_DIRECTORY, state.resolve("savepoints").toUri().toString());
        // kept when the job is cancelled or the JVM dies: the next start resumes from them
        c.set(CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION, ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
        c.set(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS, 2);
        c.set(StateBackendOptions.STATE_BACKEND, "hashmap");
        // a failure inside the JVM (a broker gone, a fenced producer) restarts the job from its last
        // checkpoint in place, as a cluster would, for as long as the run lasts
        c.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        c.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, Integer.MAX_VALUE);
        c.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofSeconds(1));
        // a small JVM (-Xmx512m): the hashmap backend needs no managed memory; few network buffers
        c.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MemorySize.parse("16m"));
        c.set(TaskManagerOptions.NETWORK_MEMORY_MIN, MemorySize.parse("16m"));
        c.set(TaskManagerOptions.NETWORK_MEMORY_MAX, MemorySize.parse("16m"));
        c.set(TaskManagerOptions.NUM_TASK_SLOTS, parallelism);
        restore.ifPresent(p -> c.set(StateRecoveryOptions.SAVEPOINT_PATH, p.toUri().toString()));
        return c;
    }

    static KafkaSource<Rec> source(final Map<String, String> flags) {
        return KafkaSource.<Rec>builder()
            .setBootstrapServers(flags.get("--bootstrap"))
            .setTopics(flags.get("--input"))
            .setGroupId(flags.get("--group"))
            // a fresh job (no checkpoint) reads from the start; a restored one from its checkpoint
            .setStartingOffsets(OffsetsInitializer.earliest())
            .setDeserializer(new Deserializer())
            .setProperty("isolation.level", "read_committed")
            // the group's offsets follow the checkpoints (the harness's drain reads them)
            .setProperty("commit.offsets.on.checkpoint", "true")
            .build();
    }

    static KafkaSink<Rec> sink(final Map<String, String> flags) {
        // the connector's own builder: it names its topic to the sink (POOLING's LISTING abort needs
        // it); no partitioner, so no partition: Kafka's default partitioner places each record by key
        final KafkaRecordSerializationSchema<Rec> serializer = KafkaRecordSerializationSchema.<Rec>builder()
            .setTopic(flags.get("--output"))
            .setKeySerializationSchema(new Field(true))
            .setValueSerializationSchema(new Field(false))
            .build();
        return KafkaSink.<Rec>builder()
            .setBootstrapServers(flags.get("--bootstrap"))
            .setRecordSerializer(serializer)
            .setDeliveryGuarantee(flags.get("--guarantee").equals("exactly_once")
                ? DeliveryGuarantee.EXACTLY_ONCE : DeliveryGuarantee.AT_LEAST_ONCE)
            .setTransactionalIdPrefix(flags.get("--transactional-id-prefix"))
            .setTransactionNamingStrategy(flags.get("--naming").equals("pooling")
                ? TransactionNamingStrategy.POOLING : TransactionNamingStrategy.INCREMENTING)
            // the builder's default is 1 h, above a broker's usual transaction.max.timeout.ms (15 min)
            .setProperty("transaction.timeout.ms", flags.get("--transaction-timeout-ms"))
            .build();
    }

    private static byte[] bytes(final String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    private static String text(final byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    /** A record's key or value as UTF-8 bytes (a class, not a lambda: the sink's lineage reads its type). */
    static final class Field implements SerializationSchema<Rec> {
        private static final long serialVersionUID = 1L;
        private final boolean key;

        Field(final boolean key) {
            this.key = key;
        }

        @Override
        public byte[] serialize(final Rec rec) {
            return bytes(key ? rec.key : rec.value);
        }
    }

    /** Key and value as text. */
    static final class Deserializer implements KafkaRecordDeserializationSchema<Rec> {
        private static final long serialVersionUID = 1L;

        @Override
        public void deserialize(final ConsumerRecord<byte[], byte[]> record, final Collector<Rec> out) {
            out.collect(new Rec(text(record.key()), text(record.value())));
        }

        @Override
        public TypeInformation<Rec> getProducedType() {
            return TypeInformation.of(Rec.class);
        }
    }

    /** The flags (each ``--name value``), with the defaults; usage and exit 2 on anything else. */
    static Map<String, String> parse(final String[] args) {
        final Map<String, String> flags = new LinkedHashMap<>(DEFAULTS);
        for (int i = 0; i < args.length; i += 2) {
            final String name = args[i];
            if (name.equals("-h") || name.equals("--help")) {
                System.out.println(USAGE);
                System.exit(0);
            }
            if (!REQUIRED.contains(name) && !DEFAULTS.containsKey(name)) {
                usage("unknown argument " + name);
            }
            if (i + 1 >= args.length) {
                usage(name + " needs a value");
            }
            flags.put(name, args[i + 1]);
        }
        for (final String name : REQUIRED) {
            if (!flags.containsKey(name)) {
                usage("missing " + name);
            }
        }
        check(flags, "--guarantee", List.of("exactly_once", "at_least_once"));
        check(flags, "--naming", List.of("incrementing", "pooling"));
        for (final String name : List.of("--parallelism", "--restored-parallelism", "--checkpoint-ms",
                                         "--transaction-timeout-ms")) {
            final String v = flags.get(name);
            if (name.equals("--restored-parallelism") ? !v.matches("|[1-9][0-9]{0,8}(,[1-9][0-9]{0,8})*")
                                                      : !v.matches("[1-9][0-9]{0,8}")) {
                usage(name + " must be an integer of 1 or more, not " + v);
            }
        }
        return flags;
    }

    private static void check(final Map<String, String> flags, final String name, final List<String> allowed) {
        if (!allowed.contains(flags.get(name))) {
            usage(name + " must be one of " + String.join(", ", allowed) + ", not " + flags.get(name));
        }
    }

    private static void usage(final String problem) {
        System.err.println("flink-job: " + problem);
        System.err.println(USAGE);
        System.exit(2);
    }
}
