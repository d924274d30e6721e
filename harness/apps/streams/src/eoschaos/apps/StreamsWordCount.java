package eoschaos.apps;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Kafka's own WordCountDemo (org.apache.kafka.streams.examples.wordcount) as a shipped app of eos-chaos
 * (docs/APPS.md, "The shipped apps"): its topic names are fixed here, as the demo's are, so a scenario
 * must create them with the names kept. Each line of {@value #INPUT_TOPIC} (a String value; the key is
 * not read) is lower-cased and split on non-word characters ({@code \W+}: not ASCII letters, digits or
 * {@code _}); the words are grouped by word (a repartition topic) and counted, and every count update
 * goes to {@value #OUTPUT_TOPIC}: the word as a String key, the count as an 8-byte Long value. Record
 * caches are off, so each word of each line is one update. Under exactly_once_v2 every count is exact
 * whatever is killed; under at_least_once a killed instance's lines since its last commit are counted
 * again after its restart: the negative control.
 */
public final class StreamsWordCount {
    /** The demo's input topic, fixed. */
    public static final String INPUT_TOPIC = "streams-plaintext-input";
    /** The demo's output topic, fixed. */
    public static final String OUTPUT_TOPIC = "streams-wordcount-output";
    private static final StreamsApp.Spec SPEC = new StreamsApp.Spec("streams-wordcount", String.join("\n",
        "usage: streams-wordcount --bootstrap HOST:PORT[,...] --application-id ID --state-dir DIR",
        "                         [--guarantee exactly_once_v2|at_least_once] [--commit-interval-ms MS]",
        "reads " + INPUT_TOPIC + ", writes " + OUTPUT_TOPIC + " (fixed names)"),
        List.of("--bootstrap", "--application-id", "--state-dir"),
        Map.of("--guarantee", StreamsConfig.EXACTLY_ONCE_V2, "--commit-interval-ms", StreamsApp.DEFAULT));

    private StreamsWordCount() {
    }

    public static void main(final String[] args) {
        final Map<String, String> flags = StreamsApp.parse(SPEC, args);
        StreamsApp.run(SPEC.name(), topology(), StreamsApp.config(flags, true));
    }

    /** The demo's topology, as its createWordCountStream builds it (its serdes given here, not by default). */
    static Topology topology() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> source = builder.stream(INPUT_TOPIC, Consumed.with(Serdes.String(), Serdes.String()));
        final KTable<String, Long> counts = source
            .flatMapValues(value -> Arrays.asList(value.toLowerCase(Locale.ROOT).split("\\W+")))
            .groupBy((key, value) -> value, Grouped.with(Serdes.String(), Serdes.String()))
            .count();
        counts.toStream().to(OUTPUT_TOPIC, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }
}
