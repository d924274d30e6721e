package eoschaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Kafka Java client for one eos-chaos workload process, served over stdin/stdout: one JSON
 * object per line each way, one request at a time ({@code id}, {@code op}, arguments), one response
 * per request ({@code id} and {@code ok}, or {@code error}: the facts of {@link Facts}). The Python
 * side is harness/workloads/clients/java.py; the protocol is described in docs/CLIENTS.md.
 *
 * <p>It lives exactly as long as its parent: end of stdin (the workload exited or was killed) halts
 * the JVM at once, whatever call is in hand. Stdout carries the protocol only; everything else
 * (the client's log) goes to stderr, which is the workload's log.
 */
public final class Bridge {
    static final ObjectMapper JSON = new ObjectMapper();
    /** The header of an app feeder's record id (harness/history/model.py FEEDER_ID_HEADER). */
    static final String FEEDER_ID_HEADER = "eos-chaos-id";
    /** Past Java's own deadline (max.block.ms) a call still gets this long to report its own TimeoutException. */
    static final long OWN_TIMEOUT_MARGIN_MS = 5_000;

    final PrintStream out;
    final Map<Integer, Producer> producers = new HashMap<>();
    final Map<Integer, Consumer> consumers = new HashMap<>();
    int nextHandle = 1;
    /** Transactional calls run here so that the per-call timeout of the caller can be kept (see {@link Producer#call}). */
    final ExecutorService calls = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "eos-chaos-call");
        t.setDaemon(true);
        return t;
    });

    Bridge(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        // The protocol owns the real stdout; anything printed by a library lands in the log instead.
        PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        BlockingQueue<String> requests = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> readRequests(requests), "eos-chaos-stdin");
        reader.setDaemon(true);
        reader.start();
        new Bridge(protocol).serve(requests);
    }

    /** Read request lines until end of input, then halt: the parent is gone (or closed us on purpose). */
    static void readRequests(BlockingQueue<String> requests) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                requests.add(line);
            }
        } catch (Exception e) {
            System.err.println("eos-chaos bridge: stdin broke: " + e);
        }
        // halt, not exit: no shutdown hooks that could wait on a broker; the parent is not listening.
        Runtime.getRuntime().halt(0);
    }

    void serve(BlockingQueue<String> requests) throws InterruptedException {
        while (true) {
            String line = requests.take();
            ObjectNode response = JSON.createObjectNode();
            JsonNode req;
            try {
                req = JSON.readTree(line);
            } catch (Exception e) {
                response.put("bug", "unreadable request: " + e.getMessage());
                send(response);
                continue;
            }
            response.set("id", req.get("id"));
            try {
                JsonNode result = handle(req, response);
                if (!response.has("error")) {
                    response.set("ok", result == null ? JSON.nullNode() : result);
                }
            } catch (Failed f) {
                response.set("error", f.facts);
            } catch (Throwable t) {
                // Anything a client call throws is a Failed; this is a bug of the bridge itself.
                response.put("bug", t.toString());
                t.printStackTrace();
            }
            send(response);
        }
    }

    void send(ObjectNode response) {
        try {
            out.println(JSON.writeValueAsString(response));
        } catch (Exception e) {
            out.println("{\"bug\": \"cannot serialise a response\"}");
        }
        out.flush();
    }

    /** A client call failed; {@code facts} say how (already mapped, see {@link Facts}). */
    static final class Failed extends Exception {
        final ObjectNode facts;

        Failed(ObjectNode facts) {
            super(facts.toString(), null, false, false);
            this.facts = facts;
        }
    }

    JsonNode handle(JsonNode req, ObjectNode response) throws Exception {
        String op = req.get("op").asText();
        switch (op) {
            case "hello": {
                ObjectNode r = JSON.createObjectNode();
                r.put("kafka_clients", clientVersion());
                r.put("java", System.getProperty("java.version"));
                r.put("uptime_ms", ManagementFactory.getRuntimeMXBean().getUptime());
                return r;
            }
            case "facts":  // the error mapping of an exception built here (unit tests; no cluster)
                return Facts.of(Facts.build(req.get("exception")), null);
            case "producer.open": {
                int h = nextHandle++;
                producers.put(h, new Producer(config(req.get("config")), calls));
                return JsonNodeFactory.instance.numberNode(h);
            }
            case "consumer.open": {
                int h = nextHandle++;
                consumers.put(h, new Consumer(config(req.get("config")), req));
                return JsonNodeFactory.instance.numberNode(h);
            }
            case "close": {
                int h = req.get("h").asInt();
                Producer p = producers.remove(h);
                if (p != null) p.close();
                Consumer c = consumers.remove(h);
                if (c != null) c.close();
                return null;
            }
            default:
                break;
        }
        if (op.startsWith("producer.")) {
            Producer p = producers.get(req.get("h").asInt());
            double timeout = req.path("timeout").asDouble(0);
            switch (op) {
                case "producer.init":
                    p.call(() -> { p.producer.initTransactions(); return null; }, "initTransactions", timeout);
                    return null;
                case "producer.begin":
                    p.pending.clear();  // a new transaction: nothing of the last one is awaited any more
                    p.direct(() -> { p.producer.beginTransaction(); return null; });
                    return null;
                case "producer.send":
                    p.direct(() -> { p.sendAll(req.get("records")); return null; });
                    return null;
                case "producer.flush":
                    return p.flush(req.get("records"), timeout, response);
                case "producer.send_offsets": {
                    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                    for (JsonNode o : req.get("offsets")) {
                        offsets.put(new TopicPartition(o.get(0).asText(), o.get(1).asInt()), new OffsetAndMetadata(o.get(2).asLong()));
                    }
                    ConsumerGroupMetadata meta = consumers.get(req.get("group").asInt()).metadata(req.get("token").asInt());
                    p.call(() -> { p.producer.sendOffsetsToTransaction(offsets, meta); return null; }, "sendOffsetsToTransaction", timeout);
                    return null;
                }
                case "producer.commit":
                    p.call(() -> { p.producer.commitTransaction(); return null; }, "commitTransaction", timeout);
                    return null;
                case "producer.abort":
                    p.call(() -> { p.producer.abortTransaction(); return null; }, "abortTransaction", timeout);
                    return null;
                default:
                    throw new IllegalArgumentException("unknown op " + op);
            }
        }
        if (op.startsWith("consumer.")) {
            Consumer c = consumers.get(req.get("h").asInt());
            switch (op) {
                case "consumer.poll":
                    return c.poll(req.get("max").asInt(), req.get("timeout").asDouble());
                case "consumer.positions":
                    return c.positions();
                case "consumer.group_metadata":
                    return JsonNodeFactory.instance.numberNode(c.snapshotMetadata());
                case "consumer.rewind":
                    c.rewind(req.get("timeout").asDouble());
                    return null;
                default:
                    throw new IllegalArgumentException("unknown op " + op);
            }
        }
        throw new IllegalArgumentException("unknown op " + op);
    }

    /**
     * The kafka-clients release on the class path, from the properties file its jar carries (the
     * class that reads it, AppInfoParser, moved to an internals package in 4.x).
     */
    static String clientVersion() {
        try (var in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            var props = new java.util.Properties();
            if (in != null) props.load(in);
            return props.getProperty("version", "unknown");
        } catch (Exception e) {
            return "unknown";
        }
    }

    /** A request's {@code config} object as Java client properties (values as strings, as a properties file has them). */
    static Map<String, Object> config(JsonNode conf) {
        Map<String, Object> props = new HashMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = conf.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            props.put(e.getKey(), e.getValue().isTextual() ? e.getValue().asText() : e.getValue().toString());
        }
        return props;
    }

    static ObjectNode failure(Throwable e, KafkaProducer<?, ?> producer) {
        return Facts.of(e, producer);
    }

    /** One transactional KafkaProducer and the records it has sent but not yet reported. */
    static final class Producer {
        final KafkaProducer<byte[], byte[]> producer;
        final ExecutorService calls;
        final long maxBlockMs;
        final List<Future<RecordMetadata>> pending = new ArrayList<>();

        Producer(Map<String, Object> props, ExecutorService calls) throws Failed {
            props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            this.calls = calls;
            this.maxBlockMs = Long.parseLong(String.valueOf(props.getOrDefault(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000")));
            try {
                this.producer = new KafkaProducer<>(props);
            } catch (RuntimeException e) {
                throw new Failed(failure(e, null));
            }
        }

        /** A call that does not block on the network; its exception is the client's answer. */
        <T> T direct(Callable<T> fn) throws Failed {
            try {
                return fn.call();
            } catch (Exception e) {
                throw new Failed(failure(e, producer));
            }
        }

        /**
         * A blocking transactional call, waited for at most {@code timeoutS} (the workload's per-call
         * timeout). Java bounds these calls by max.block.ms alone; when the caller's timeout is the
         * shorter, the call is left running on its thread and reported as timed out -- which is what
         * Java's own TimeoutException means too (the request goes on, calling again resumes it:
         * Java returns the same pending result to the next call of the same method, and refuses
         * another method with IllegalStateException until it completes).
         */
        void call(Callable<Void> fn, String what, double timeoutS) throws Failed {
            long waitMs = timeoutS > 0 && timeoutS * 1000 < maxBlockMs ? (long) (timeoutS * 1000) : maxBlockMs + OWN_TIMEOUT_MARGIN_MS;
            Future<Void> f = calls.submit(fn);
            try {
                f.get(waitMs, TimeUnit.MILLISECONDS);
            } catch (ExecutionException e) {
                throw new Failed(failure(e.getCause(), producer));
            } catch (java.util.concurrent.TimeoutException e) {
                throw new Failed(Facts.bridgeTimeout(what, waitMs));
            } catch (InterruptedException e) {
                throw new Failed(failure(e, producer));
            }
        }

        /**
         * Hand {@code records} to the producer. A send that throws (the producer is fenced, or in an
         * error state) fails that record and every later one of the batch, so that {@code pending}
         * stays aligned with the records the Python side handed over; the exception is thrown after.
         */
        void sendAll(JsonNode records) {
            if (records == null) return;
            RuntimeException failed = null;
            for (JsonNode r : records) {
                if (failed != null) {
                    pending.add(CompletableFuture.failedFuture(failed));
                    continue;
                }
                JsonNode key = r.get(2);
                byte[] k = key.isNull() ? null : key.asText().getBytes(StandardCharsets.ISO_8859_1);
                byte[] v = r.get(3).asText().getBytes(StandardCharsets.UTF_8);
                try {
                    pending.add(producer.send(new ProducerRecord<>(r.get(0).asText(), r.get(1).asInt(), k, v)));
                } catch (RuntimeException e) {
                    failed = e;
                    pending.add(CompletableFuture.failedFuture(e));
                }
            }
            if (failed != null) throw failed;
        }

        /**
         * Send {@code records}, then wait at most {@code timeoutS} for every record sent since the last
         * flush; the result is their offsets in send order (null: not acknowledged). Java's own flush()
         * has no timeout, so this waits on the records' futures instead. The first failed record (or
         * the timeout) is the call's error; the offsets of the acknowledged ones are reported with it.
         */
        JsonNode flush(JsonNode records, double timeoutS, ObjectNode response) throws Failed {
            try {
                sendAll(records);
            } catch (RuntimeException e) {
                // already a failed record of pending: reported below, in send order
            }
            long deadline = System.nanoTime() + (long) (timeoutS * 1e9);
            ArrayNode offsets = JSON.createArrayNode();
            ObjectNode error = null;
            for (Future<RecordMetadata> f : pending) {
                try {
                    long left = Math.max(0, deadline - System.nanoTime());
                    offsets.add(f.get(left, TimeUnit.NANOSECONDS).offset());
                } catch (ExecutionException e) {
                    offsets.addNull();
                    if (error == null) error = failure(e.getCause(), producer);
                } catch (java.util.concurrent.TimeoutException e) {
                    offsets.addNull();
                    if (error == null) error = Facts.bridgeTimeout("flush", (long) (timeoutS * 1000));
                } catch (InterruptedException e) {
                    offsets.addNull();
                    if (error == null) error = failure(e, producer);
                }
            }
            pending.clear();
            if (error != null) {
                response.set("error", error);
                response.set("offsets", offsets);
            }
            return offsets;
        }

        void close() {
            try {
                producer.close(Duration.ZERO);
            } catch (Exception e) {
                // a fenced or broken producer is being dropped anyway
            }
        }
    }

    /** One KafkaConsumer: assign mode from offset 0, or subscribe mode in a group. */
    static final class Consumer {
        final Map<String, Object> props;
        final JsonNode spec;
        KafkaConsumer<byte[], byte[]> consumer;
        final Map<Integer, ConsumerGroupMetadata> tokens = new HashMap<>();
        int nextToken = 1;

        Consumer(Map<String, Object> props, JsonNode spec) {
            props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            this.props = props;
            this.spec = spec;
        }

        /**
         * The consumer, made at its first use: max.poll.records is fixed at creation in Java, and the
         * workload's batch size is only known from its first poll.
         */
        KafkaConsumer<byte[], byte[]> consumer(int maxRecords) throws Failed {
            if (consumer != null) return consumer;
            props.putIfAbsent(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, String.valueOf(maxRecords));
            try {
                consumer = new KafkaConsumer<>(props);
                if (spec.has("assign")) {
                    List<TopicPartition> tps = new ArrayList<>();
                    for (JsonNode tp : spec.get("assign")) tps.add(new TopicPartition(tp.get(0).asText(), tp.get(1).asInt()));
                    consumer.assign(tps);
                    consumer.seekToBeginning(tps);
                } else {
                    List<String> topics = new ArrayList<>();
                    for (JsonNode t : spec.get("subscribe")) topics.add(t.asText());
                    consumer.subscribe(topics);
                }
            } catch (RuntimeException e) {
                throw new Failed(failure(e, null));
            }
            return consumer;
        }

        JsonNode poll(int max, double timeoutS) throws Failed {
            KafkaConsumer<byte[], byte[]> c = consumer(max);
            ArrayNode out = JSON.createArrayNode();
            try {
                ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis((long) (timeoutS * 1000)));
                Map<TopicPartition, Long> rewindTo = new HashMap<>();
                int n = 0;
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                    if (n >= max || rewindTo.containsKey(tp)) {
                        // more than asked for (a later poll asked for fewer): hand them out next time
                        rewindTo.putIfAbsent(tp, r.offset());
                        continue;
                    }
                    n++;
                    ArrayNode rec = out.addArray();
                    rec.add(r.topic()).add(r.partition()).add(r.offset());
                    // an app feeder's record: its id (the header) is its value in the history, its payload may repeat
                    Header id = r.headers().lastHeader(FEEDER_ID_HEADER);
                    byte[] value = id != null && id.value() != null ? id.value() : r.value();
                    rec.add(value == null ? "" : new String(value, StandardCharsets.UTF_8));
                }
                for (Map.Entry<TopicPartition, Long> e : rewindTo.entrySet()) c.seek(e.getKey(), e.getValue());
            } catch (RuntimeException e) {
                throw new Failed(failure(e, null));
            }
            return out;
        }

        JsonNode positions() throws Failed {
            KafkaConsumer<byte[], byte[]> c = consumer(500);
            ArrayNode out = JSON.createArrayNode();
            try {
                for (TopicPartition tp : c.assignment()) {
                    out.addArray().add(tp.topic()).add(tp.partition()).add(c.position(tp, Duration.ofSeconds(30)));
                }
            } catch (RuntimeException e) {
                throw new Failed(failure(e, null));
            }
            return out;
        }

        /** Snapshot the group generation now; the producer's send_offsets names the snapshot by its token. */
        int snapshotMetadata() throws Failed {
            KafkaConsumer<byte[], byte[]> c = consumer(500);
            try {
                tokens.clear();  // only the latest snapshot is ever used
                int t = nextToken++;
                tokens.put(t, c.groupMetadata());
                return t;
            } catch (RuntimeException e) {
                throw new Failed(failure(e, null));
            }
        }

        ConsumerGroupMetadata metadata(int token) {
            ConsumerGroupMetadata m = tokens.get(token);
            if (m == null) throw new IllegalArgumentException("no group metadata snapshot " + token);
            return m;
        }

        void rewind(double timeoutS) throws Failed {
            KafkaConsumer<byte[], byte[]> c = consumer(500);
            try {
                var assigned = c.assignment();
                if (assigned.isEmpty()) return;
                Map<TopicPartition, OffsetAndMetadata> committed = c.committed(assigned, Duration.ofMillis((long) (timeoutS * 1000)));
                List<TopicPartition> none = new ArrayList<>();
                for (TopicPartition tp : assigned) {
                    OffsetAndMetadata om = committed.get(tp);
                    if (om == null) none.add(tp); else c.seek(tp, om.offset());
                }
                if (!none.isEmpty()) c.seekToBeginning(none);
            } catch (RuntimeException e) {
                throw new Failed(failure(e, null));
            }
        }

        void close() {
            if (consumer == null) return;
            try {
                consumer.close(Duration.ofSeconds(5));  // leave the group, bounded
            } catch (Exception e) {
                // a broken consumer is being dropped anyway
            }
        }
    }
}
