package eoschaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.lang.reflect.Field;
import java.lang.reflect.Method;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TransactionAbortableException;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.protocol.Errors;

/**
 * How a Java client exception becomes the facts the workloads' outcome rules read
 * (harness/workloads/client.py ErrorFacts; the reasoning is in docs/CLIENTS.md):
 *
 * <ul>
 * <li>name: Kafka's {@link Errors} name of the first {@link ApiException} in the cause chain
 *     (TimeoutException is REQUEST_TIMED_OUT), else the exception's class name;</li>
 * <li>retriable: the thrown exception is a {@link RetriableException} (calling again may succeed);</li>
 * <li>timed_out: the thrown exception is Kafka's {@link TimeoutException};</li>
 * <li>fenced: ProducerFencedException or InvalidProducerEpochException anywhere in the chain;</li>
 * <li>fatal / txn_requires_abort: the producer's own verdict after the call (its transaction
 *     manager in FATAL_ERROR: only close() is allowed; in ABORTABLE_ERROR: only abort), read from
 *     the client because the exception alone does not say it -- the same exception class can leave
 *     the producer abortable or dead. Without a producer (consumers, or the state cannot be read)
 *     the exception classes Java documents as fatal / abortable decide.</li>
 * </ul>
 */
final class Facts {
    /** How many causes deep the chain is searched. */
    static final int MAX_DEPTH = 8;

    private Facts() {
    }

    static ObjectNode of(Throwable e, KafkaProducer<?, ?> producer) {
        ObjectNode f = Bridge.JSON.createObjectNode();
        Throwable api = find(e, ApiException.class);
        String name;
        if (api != null) {
            Errors err = Errors.forException(api);
            name = err == Errors.UNKNOWN_SERVER_ERROR && !(api instanceof UnknownServerException) ? api.getClass().getSimpleName() : err.name();
        } else {
            name = e.getClass().getSimpleName();
        }
        boolean fenced = find(e, ProducerFencedException.class) != null || find(e, InvalidProducerEpochException.class) != null;
        boolean fatalClass = find(e, ProducerFencedException.class) != null || find(e, OutOfOrderSequenceException.class) != null
                || find(e, AuthorizationException.class) != null || find(e, UnsupportedVersionException.class) != null
                || find(e, FencedInstanceIdException.class) != null;
        boolean abortableClass = find(e, TransactionAbortableException.class) != null;
        Boolean fatalState = producer == null ? null : state(producer, "hasFatalError");
        Boolean abortableState = producer == null ? null : state(producer, "hasAbortableError");
        boolean fatal = fatalState != null ? fatalState : fatalClass;
        f.put("name", name);
        String message = message(e);
        // the name is the class already (no Kafka error code): do not say it twice in ``NAME: message``
        f.put("message", name.equals(e.getClass().getSimpleName()) ? message.substring(name.length() + 2) : message);
        f.put("retriable", e instanceof RetriableException);
        f.put("fatal", fatal);
        f.put("txn_requires_abort", !fatal && (abortableState != null ? abortableState || abortableClass : abortableClass));
        f.put("fenced", fenced);
        f.put("timed_out", e instanceof TimeoutException);
        f.put("exception", e.getClass().getName());
        return f;
    }

    /** The call outlived the caller's per-call timeout (shorter than max.block.ms): Java's TimeoutException in meaning. */
    static ObjectNode bridgeTimeout(String what, long ms) {
        ObjectNode f = Bridge.JSON.createObjectNode();
        f.put("name", Errors.REQUEST_TIMED_OUT.name());
        f.put("message", what + " did not complete within " + ms + " ms (the workload's timeout for this call); "
                + "it goes on in the background, and calling it again resumes it");
        f.put("retriable", true);
        f.put("fatal", false);
        f.put("txn_requires_abort", false);
        f.put("fenced", false);
        f.put("timed_out", true);
        f.put("exception", "eoschaos.CallTimeout");
        return f;
    }

    /** ``ClassName: message``, with the cause that names the error when it is not the thrown exception. */
    static String message(Throwable e) {
        StringBuilder b = new StringBuilder(e.getClass().getSimpleName()).append(": ").append(e.getMessage());
        Throwable c = e.getCause();
        for (int i = 0; c != null && c != e && i < MAX_DEPTH; i++, c = c.getCause()) {
            b.append(" (caused by ").append(c.getClass().getSimpleName()).append(": ").append(c.getMessage()).append(")");
        }
        return b.toString();
    }

    static Throwable find(Throwable e, Class<? extends Throwable> type) {
        Throwable c = e;
        for (int i = 0; c != null && i < MAX_DEPTH; i++, c = c.getCause()) {
            if (type.isInstance(c)) return c;
        }
        return null;
    }

    /**
     * A yes/no question to the producer's TransactionManager (hasFatalError, hasAbortableError):
     * package-private in kafka-clients 3.9 and 4.x alike, read by reflection (the client jar is on
     * the class path, so no module boundary stands in the way). Null: it cannot be asked.
     */
    static Boolean state(KafkaProducer<?, ?> producer, String question) {
        try {
            Field f = KafkaProducer.class.getDeclaredField("transactionManager");
            f.setAccessible(true);
            Object tm = f.get(producer);
            if (tm == null) return null;
            Method m = tm.getClass().getDeclaredMethod(question);
            m.setAccessible(true);
            return (Boolean) m.invoke(tm);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    /** An exception described as {@code {"class": ..., "message": ..., "cause": {...}}} (the unit tests' table). */
    static Throwable build(JsonNode spec) throws ReflectiveOperationException {
        Class<?> cls = Class.forName(spec.get("class").asText());
        String msg = spec.path("message").asText("");
        if (spec.hasNonNull("cause")) {
            Throwable cause = build(spec.get("cause"));
            return (Throwable) cls.getConstructor(String.class, Throwable.class).newInstance(msg, cause);
        }
        return (Throwable) cls.getConstructor(String.class).newInstance(msg);
    }
}
