package eoschaos.apps;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;

/**
 * A shipped Kafka Streams app of eos-chaos (docs/APPS.md, "The shipped apps"): counts the records of
 * each input key in tumbling windows of {@code --window-size-ms} on the records' own timestamps, with
 * {@code --grace-ms} of grace (a record whose window ended more than the grace before the stream time
 * its task has seen is dropped, as Streams drops it), and writes every count update to {@code --output}:
 * an 8-byte Long value, keyed by Streams' TimeWindowedSerializer (the key's UTF-8 bytes, then the
 * window's start as 8 bytes big-endian; {@code --window-key time-windowed}, the default) or by the text
 * {@code <key>@<window start ms>} ({@code --window-key text}). No repartition: the input's key is the
 * grouping key, so a task's stream time is its input partition's. Record caches are off (one update per
 * counted input), and nothing is suppressed.
 */
public final class StreamsWindowedCount {
    private static final List<String> WINDOW_KEYS = List.of("time-windowed", "text");
    private static final StreamsApp.Spec SPEC = new StreamsApp.Spec("streams-windowed-count", String.join("\n",
        "usage: streams-windowed-count --bootstrap HOST:PORT[,...] --input TOPIC --output TOPIC --application-id ID",
        "                              --state-dir DIR [--guarantee exactly_once_v2|at_least_once]",
        "                              [--window-size-ms MS] [--grace-ms MS] [--window-key time-windowed|text]",
        "                              [--commit-interval-ms MS]"),
        List.of("--bootstrap", "--input", "--output", "--application-id", "--state-dir"),
        Map.of("--guarantee", StreamsConfig.EXACTLY_ONCE_V2, "--window-size-ms", "2000", "--grace-ms", "1000",
               "--window-key", "time-windowed", "--commit-interval-ms", StreamsApp.DEFAULT));

    private StreamsWindowedCount() {
    }

    public static void main(final String[] args) {
        final Map<String, String> flags = StreamsApp.parse(SPEC, args);
        final long size = StreamsApp.atLeast(SPEC, flags, "--window-size-ms", 1);
        final long grace = StreamsApp.atLeast(SPEC, flags, "--grace-ms", 0);
        if (!WINDOW_KEYS.contains(flags.get("--window-key"))) {
            StreamsApp.usage(SPEC, "--window-key " + flags.get("--window-key") + ": expected one of "
                + String.join(", ", WINDOW_KEYS));
        }
        StreamsApp.run(SPEC.name(), topology(flags, size, grace), StreamsApp.config(flags, true));
    }

    static Topology topology(final Map<String, String> flags, final long size, final long grace) {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<Windowed<String>, Long> counts = builder
            .stream(flags.get("--input"), Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(size), Duration.ofMillis(grace)))
            .count()
            .toStream();
        if (flags.get("--window-key").equals("text")) {
            counts.map((w, n) -> KeyValue.pair(w.key() + "@" + w.window().start(), n))
                .to(flags.get("--output"), Produced.with(Serdes.String(), Serdes.Long()));
        } else {
            final Serde<Windowed<String>> keys = WindowedSerdes.timeWindowedSerdeFrom(String.class, size);
            counts.to(flags.get("--output"), Produced.with(keys, Serdes.Long()));
        }
        return builder.build();
    }
}
