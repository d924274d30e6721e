package eoschaos.apps;

import java.util.List;
import java.util.Map;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A shipped Kafka Streams app of eos-chaos (docs/APPS.md, "The shipped apps"): a KStream-KTable left
 * join. {@code --orders} is a stream of orders keyed by customer id (the value: the order, as text);
 * {@code --customers} a table of each customer's region (key: customer id, value: the region; a null
 * value deletes it). Each order is joined with its customer's region as the table holds it when the
 * order is processed, and one record per order goes to {@code --output}: the customer id as key, the
 * value {@code <order>@<region>}, or {@code <order>@-} when the table has no region for it yet. The two
 * inputs must be co-partitioned (as many partitions, keys partitioned alike). Under exactly_once_v2 each
 * order is joined once, with a committed region; under at_least_once the inputs are read as Streams
 * reads them by default for that guarantee (read_uncommitted: aborted orders and regions are joined
 * too) and a killed instance's orders since its last commit are joined again: the negative control.
 */
public final class StreamsJoin {
    /** The value part of an order the table had no region for. */
    public static final String NO_REGION = "-";
    private static final StreamsApp.Spec SPEC = new StreamsApp.Spec("streams-join", String.join("\n",
        "usage: streams-join --bootstrap HOST:PORT[,...] --orders TOPIC --customers TOPIC --output TOPIC",
        "                    --application-id ID --state-dir DIR [--guarantee exactly_once_v2|at_least_once]",
        "                    [--commit-interval-ms MS]"),
        List.of("--bootstrap", "--orders", "--customers", "--output", "--application-id", "--state-dir"),
        Map.of("--guarantee", StreamsConfig.EXACTLY_ONCE_V2, "--commit-interval-ms", StreamsApp.DEFAULT));

    private StreamsJoin() {
    }

    public static void main(final String[] args) {
        final Map<String, String> flags = StreamsApp.parse(SPEC, args);
        final boolean exactlyOnce = flags.get("--guarantee").equals(StreamsConfig.EXACTLY_ONCE_V2);
        StreamsApp.run(SPEC.name(), topology(flags), StreamsApp.config(flags, exactlyOnce));
    }

    static Topology topology(final Map<String, String> flags) {
        final StreamsBuilder builder = new StreamsBuilder();
        final KTable<String, String> regions = builder.table(flags.get("--customers"),
            Consumed.with(Serdes.String(), Serdes.String()), Materialized.as("regions"));
        builder.stream(flags.get("--orders"), Consumed.with(Serdes.String(), Serdes.String()))
            .leftJoin(regions, (order, region) -> order + "@" + (region == null ? NO_REGION : region),
                      Joined.with(Serdes.String(), Serdes.String(), Serdes.String()))
            .to(flags.get("--output"), Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }
}
