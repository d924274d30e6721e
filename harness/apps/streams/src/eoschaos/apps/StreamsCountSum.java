package eoschaos.apps;

import java.util.List;
import java.util.Map;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
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
    private static final StreamsApp.Spec SPEC = new StreamsApp.Spec("streams-count-sum", String.join("\n",
        "usage: streams-count-sum --bootstrap HOST:PORT[,...] --input TOPIC --count-topic TOPIC --sum-topic TOPIC",
        "                         --application-id ID --state-dir DIR [--guarantee exactly_once_v2|at_least_once]",
        "                         [--threads N]"),
        List.of("--bootstrap", "--input", "--count-topic", "--sum-topic", "--application-id", "--state-dir"),
        Map.of("--guarantee", StreamsConfig.EXACTLY_ONCE_V2, "--threads", "1"));
    private static final Logger LOG = LoggerFactory.getLogger(StreamsCountSum.class);

    private StreamsCountSum() {
    }

    public static void main(final String[] args) {
        final Map<String, String> flags = StreamsApp.parse(SPEC, args);
        StreamsApp.atLeast(SPEC, flags, "--threads", 1);
        StreamsApp.run(SPEC.name(), topology(flags), StreamsApp.config(flags, true));
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
}
