// The wire proxy's rewrite fixtures, written by Kafka's own message classes (the pinned kafka-clients):
// for each response that carries a broker's address, one response per version the release knows,
// serialized twice: with the brokers' real addresses (<api>-v<N>.in.hex, what a broker sends) and
// with the proxy's (<api>-v<N>.want.hex, what the client must get). kwire's rewrite of `in` must be
// `want` byte for byte (rewrite_fixtures_test.go). Run by tests/unit/test_kwire.py, which fails when
// the committed fixtures differ from what this writes.
//
//   java -cp CLASSES:LIBS/* GenResponses OUT_DIR
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BiFunction;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.DescribeClusterResponseData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.FindCoordinatorResponseData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.requests.RequestUtils;

public class GenResponses {
    /** The proxy's map: node id -> its listener (what kwire gets as -advertise). Node 9 is not in it. */
    static final Map<Integer, String> PROXY = Map.of(1, "127.0.0.1:39092", 2, "127.0.0.1:39094", 3, "127.0.0.1:39096");
    static final int CORRELATION_ID = 0x01020304;

    /** An address: the broker's own, or the proxy's for that node. */
    record Addr(String host, int port) {}

    static Addr addr(int node, boolean proxied) {
        if (!proxied) {
            return new Addr("kafka-" + node + ".staging.example.internal", 9092 + node);
        }
        String[] hp = PROXY.get(node).split(":");
        return new Addr(hp[0], Integer.parseInt(hp[1]));
    }

    public static void main(String[] args) throws Exception {
        Path out = Path.of(args[0]);
        Files.createDirectories(out);
        Map<String, String> files = new TreeMap<>();
        gen(files, ApiKeys.METADATA, "metadata", GenResponses::metadata);
        gen(files, ApiKeys.FIND_COORDINATOR, "findcoordinator", GenResponses::findCoordinator);
        gen(files, ApiKeys.DESCRIBE_CLUSTER, "describecluster", (v, p) -> describeCluster(v, p, (byte) 1));
        gen(files, ApiKeys.DESCRIBE_CLUSTER, "describecluster-controllers", (v, p) -> describeCluster(v, p, (byte) 2));
        gen(files, ApiKeys.PRODUCE, "produce", GenResponses::produce);
        gen(files, ApiKeys.FETCH, "fetch", GenResponses::fetch);
        gen(files, ApiKeys.API_VERSIONS, "apiversions", GenResponses::apiVersions);
        for (Map.Entry<String, String> f : files.entrySet()) {
            Files.writeString(out.resolve(f.getKey()), f.getValue() + "\n");
        }
    }

    /** One in/want pair per version of key, named NAME-APIKEY-vVERSION (the map: PROXY, and fixtureMap in rewrite_fixtures_test.go). */
    static void gen(Map<String, String> files, ApiKeys key, String name, BiFunction<Short, Boolean, ApiMessage> build) {
        for (short v = key.oldestVersion(); v <= key.latestVersion(true); v++) {
            if (name.endsWith("-controllers") && v < 1) {
                continue; // EndpointType is v1+
            }
            String base = String.format("%s-%d-v%d", name, key.id, v);
            files.put(base + ".in.hex", hex(key, v, build.apply(v, false)));
            files.put(base + ".want.hex", hex(key, v, build.apply(v, true)));
        }
    }

    /** The frame as the broker writes it: size, response header, body. */
    static String hex(ApiKeys key, short v, ApiMessage body) {
        ResponseHeaderData h = new ResponseHeaderData().setCorrelationId(CORRELATION_ID);
        ByteBuffer b = RequestUtils.serialize(h, key.responseHeaderVersion(v), body, v);
        ByteBuffer framed = ByteBuffer.allocate(4 + b.remaining()).putInt(b.remaining()).put(b);
        return HexFormat.of().formatHex(framed.array());
    }

    static ApiMessage metadata(short v, boolean proxied) {
        MetadataResponseData d = new MetadataResponseData();
        MetadataResponseData.MetadataResponseBrokerCollection brokers = new MetadataResponseData.MetadataResponseBrokerCollection();
        for (int node : new int[] {1, 2, 3}) {
            Addr a = addr(node, proxied);
            MetadataResponseData.MetadataResponseBroker b = new MetadataResponseData.MetadataResponseBroker()
                .setNodeId(node).setHost(a.host()).setPort(a.port());
            if (v >= 1) {
                b.setRack(node == 2 ? null : "rack-" + node);
            }
            brokers.add(b);
        }
        d.setBrokers(brokers);
        if (v >= 3) {
            d.setThrottleTimeMs(7);
        }
        if (v >= 2) {
            d.setClusterId("kGZ3tYjLSmuV1qzBoxNdSw");
        }
        if (v >= 1) {
            d.setControllerId(2);
        }
        MetadataResponseData.MetadataResponseTopic t = new MetadataResponseData.MetadataResponseTopic()
            .setName("eos-in").setErrorCode((short) 0);
        if (v >= 10) {
            t.setTopicId(Uuid.fromString("p6ZlQ1ZxQmW2xX3Yk8Jt4A"));
        }
        List<MetadataResponseData.MetadataResponsePartition> parts = new ArrayList<>();
        for (int p = 0; p < 3; p++) {
            MetadataResponseData.MetadataResponsePartition mp = new MetadataResponseData.MetadataResponsePartition()
                .setPartitionIndex(p).setLeaderId(1 + p).setReplicaNodes(List.of(1, 2, 3)).setIsrNodes(List.of(1, 2, 3));
            if (v >= 7) {
                mp.setLeaderEpoch(4);
            }
            parts.add(mp);
        }
        t.setPartitions(parts);
        MetadataResponseData.MetadataResponseTopicCollection topics = new MetadataResponseData.MetadataResponseTopicCollection();
        topics.add(t);
        d.setTopics(topics);
        return d;
    }

    static ApiMessage findCoordinator(short v, boolean proxied) {
        FindCoordinatorResponseData d = new FindCoordinatorResponseData();
        if (v >= 1) {
            d.setThrottleTimeMs(3);
        }
        Addr a = addr(2, proxied);
        if (v <= 3) {
            return d.setErrorCode((short) 0).setNodeId(2).setHost(a.host()).setPort(a.port());
        }
        Addr b = addr(3, proxied);
        d.setCoordinators(List.of(
            new FindCoordinatorResponseData.Coordinator().setKey("eos-txn-1").setNodeId(2).setHost(a.host()).setPort(a.port()),
            // not available: node -1, no host (left alone by the proxy, as by Kroxylicious)
            new FindCoordinatorResponseData.Coordinator().setKey("eos-txn-2").setNodeId(-1).setHost("").setPort(-1)
                .setErrorCode((short) 15).setErrorMessage("The coordinator is not available."),
            new FindCoordinatorResponseData.Coordinator().setKey("eos-group").setNodeId(3).setHost(b.host()).setPort(b.port())));
        return d;
    }

    static ApiMessage describeCluster(short v, boolean proxied, byte endpointType) {
        // controllers (EndpointType 2) are not rewritten: their "proxied" twin is the same response
        boolean rewrite = proxied && endpointType == 1;
        DescribeClusterResponseData d = new DescribeClusterResponseData().setThrottleTimeMs(1)
            .setClusterId("kGZ3tYjLSmuV1qzBoxNdSw").setControllerId(endpointType == 1 ? 2 : 3000);
        if (v >= 1) {
            d.setEndpointType(endpointType);
        }
        DescribeClusterResponseData.DescribeClusterBrokerCollection brokers = new DescribeClusterResponseData.DescribeClusterBrokerCollection();
        for (int node : new int[] {1, 2, 3}) {
            Addr a = addr(node, rewrite);
            int id = endpointType == 1 ? node : 3000 + node;
            DescribeClusterResponseData.DescribeClusterBroker b = new DescribeClusterResponseData.DescribeClusterBroker()
                .setBrokerId(id).setHost(a.host()).setPort(endpointType == 1 ? a.port() : 9093).setRack(node == 1 ? "rack-1" : null);
            if (v >= 2) {
                b.setIsFenced(node == 3);
            }
            brokers.add(b);
        }
        return d.setBrokers(brokers);
    }

    static ApiMessage produce(short v, boolean proxied) {
        ProduceResponseData d = new ProduceResponseData().setThrottleTimeMs(5);
        ProduceResponseData.TopicProduceResponse t = new ProduceResponseData.TopicProduceResponse();
        if (v >= 13) {
            t.setTopicId(Uuid.fromString("p6ZlQ1ZxQmW2xX3Yk8Jt4A"));
        } else {
            t.setName("eos-out");
        }
        ProduceResponseData.PartitionProduceResponse ok = new ProduceResponseData.PartitionProduceResponse()
            .setIndex(0).setBaseOffset(1234).setLogAppendTimeMs(-1).setLogStartOffset(0);
        ProduceResponseData.PartitionProduceResponse moved = new ProduceResponseData.PartitionProduceResponse()
            .setIndex(1).setErrorCode((short) 6).setBaseOffset(-1).setLogAppendTimeMs(-1).setLogStartOffset(-1);
        if (v >= 8) {
            moved.setErrorMessage("not the leader").setRecordErrors(List.of(
                new ProduceResponseData.BatchIndexAndErrorMessage().setBatchIndex(0).setBatchIndexErrorMessage("moved")));
        }
        if (v >= 10) {
            moved.setCurrentLeader(new ProduceResponseData.LeaderIdAndEpoch().setLeaderId(3).setLeaderEpoch(8));
            ProduceResponseData.NodeEndpointCollection eps = new ProduceResponseData.NodeEndpointCollection();
            for (int node : new int[] {3, 1}) {
                Addr a = addr(node, proxied);
                eps.add(new ProduceResponseData.NodeEndpoint().setNodeId(node).setHost(a.host()).setPort(a.port())
                    .setRack(node == 3 ? "rack-3" : null));
            }
            d.setNodeEndpoints(eps);
        }
        t.setPartitionResponses(List.of(ok, moved));
        ProduceResponseData.TopicProduceResponseCollection topics = new ProduceResponseData.TopicProduceResponseCollection();
        topics.add(t);
        return d.setResponses(topics);
    }

    static ApiMessage fetch(short v, boolean proxied) {
        FetchResponseData d = new FetchResponseData().setThrottleTimeMs(2);
        if (v >= 7) {
            d.setSessionId(77);
        }
        FetchResponseData.FetchableTopicResponse t = new FetchResponseData.FetchableTopicResponse();
        if (v >= 13) {
            t.setTopicId(Uuid.fromString("p6ZlQ1ZxQmW2xX3Yk8Jt4A"));
        } else {
            t.setTopic("eos-in");
        }
        // opaque record bytes: the proxy skips them by their length, never looks inside
        byte[] records = "not really a record batch, but bytes of a known length".getBytes(StandardCharsets.US_ASCII);
        FetchResponseData.PartitionData data = new FetchResponseData.PartitionData().setPartitionIndex(0)
            .setHighWatermark(500).setLastStableOffset(490).setLogStartOffset(0)
            .setAbortedTransactions(List.of(new FetchResponseData.AbortedTransaction().setProducerId(42).setFirstOffset(480)))
            .setRecords(MemoryRecords.readableRecords(ByteBuffer.wrap(records)));
        FetchResponseData.PartitionData moved = new FetchResponseData.PartitionData().setPartitionIndex(1)
            .setErrorCode((short) 6).setHighWatermark(-1).setRecords(MemoryRecords.EMPTY);
        if (v >= 12) {
            moved.setCurrentLeader(new FetchResponseData.LeaderIdAndEpoch().setLeaderId(2).setLeaderEpoch(9));
            data.setDivergingEpoch(new FetchResponseData.EpochEndOffset().setEpoch(3).setEndOffset(470));
        }
        if (v >= 16) {
            FetchResponseData.NodeEndpointCollection eps = new FetchResponseData.NodeEndpointCollection();
            // node 9 is not in the proxy's map: it gets a host that never resolves, and keeps its port
            for (int node : new int[] {2, 9}) {
                Addr a = node == 9 ? new Addr(proxied ? "unmapped-node-9.invalid" : "kafka-9.staging.example.internal", 9101)
                    : addr(node, proxied);
                eps.add(new FetchResponseData.NodeEndpoint().setNodeId(node).setHost(a.host()).setPort(a.port()));
            }
            d.setNodeEndpoints(eps);
        }
        t.setPartitions(List.of(data, moved));
        return d.setResponses(List.of(t));
    }

    static ApiMessage apiVersions(short v, boolean proxied) {
        ApiVersionsResponseData d = new ApiVersionsResponseData();
        ApiVersionsResponseData.ApiVersionCollection keys = new ApiVersionsResponseData.ApiVersionCollection();
        for (ApiKeys k : ApiKeys.values()) {
            // a rewriting proxy hides the two share-group APIs whose responses carry NodeEndpoints
            if (k.messageType.listeners().contains(org.apache.kafka.common.message.ApiMessageType.ListenerType.BROKER)
                    && !(proxied && (k.id == 78 || k.id == 79))) {
                keys.add(new ApiVersionsResponseData.ApiVersion().setApiKey(k.id).setMinVersion(k.oldestVersion())
                    .setMaxVersion(k.latestVersion(true)));
            }
        }
        d.setApiKeys(keys);
        if (v >= 1) {
            d.setThrottleTimeMs(0);
        }
        if (v >= 3) {
            d.setFinalizedFeaturesEpoch(12);
        }
        return d;
    }
}
