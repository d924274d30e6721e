"""Every external artifact version the harness fetches, pinned in this one place."""

from __future__ import annotations

#: Newest Apache Kafka 4.x release on Maven Central (org.apache.kafka:kafka_2.13).
KAFKA_VERSION = "4.4.0"
#: Versions a person may ask for with --kafka-version. Older than 3.9 lacks advertised
#: controller listeners (KIP-853), which the per-source proxy routing of the raft quorum needs
#: (what going further back would take, and whether it is worth it: docs/MATRIX.md, Older Kafka releases).
MIN_KAFKA_VERSION = (3, 9, 0)
SCALA_BINARY = "2.13"

#: The published Kafka POMs carry no logging backend; the distribution ships log4j2 via slf4j 2.
LOG4J_VERSION = "2.24.3"
SLF4J_VERSION = "2.0.17"

#: Artifacts excluded from the broker classpath. kafka-tools-api holds interfaces for the console
#: tools only; the broker never loads it, and 4.4.0's jar is absent from Maven Central, so leaving it
#: in would make 4.4.0 unresolvable.
KAFKA_EXCLUDES = ("org.apache.kafka:kafka-tools-api",)
#: Kafka's own tools (ProducerPerformance) for `eos-chaos bench producer`: a client-side tool, so it
#: need not match the broker. kafka-tools 4.4.0 is not on Maven Central; 4.3.1 is the newest there.
KAFKA_TOOLS_VERSION = "4.3.1"

#: The Java client bridge (harness/workloads/clients/java_src, docs/CLIENTS.md): ``library: java`` means kafka-clients
#: ``DEFAULT_JAVA_VERSION`` (harness/workloads/clients); the set-up also builds the newest 3.x (no
#: transaction.version 2, KIP-890 part 2), so both protocols' clients are ready for the tests.
JAVA_CLIENT_3X_VERSION = "3.9.2"
#: The Java client a bare ``java`` library runs (``java@VERSION`` picks another): the newest release,
#: the KIP-890 client (harness.workloads.clients.DEFAULT_JAVA_VERSION)
JAVA_CLIENT_VERSION = "4.4.0"
#: The bridge's JSON library and its log backend (kafka-clients logs through slf4j; stderr, errors only).
JACKSON_VERSION = "2.21.2"

#: The shipped Kafka Streams app (harness/apps/streams): org.apache.kafka:kafka-streams, logging
#: through slf4j-simple (SLF4J_VERSION) to stderr.
KAFKA_STREAMS_VERSION = "4.4.0"

#: The shipped Flink job (harness/apps/flink, docs/FLINK.md): the newest flink-connector-kafka and the
#: Flink release it is built for (its version's suffix), both on Maven Central. 5.0.0-2.2 brings
#: kafka-clients 4.2.0 (the KIP-890 client: transaction.version 2 on a 4.x cluster).
FLINK_VERSION = "2.2.1"
FLINK_KAFKA_CONNECTOR_VERSION = "5.0.0-2.2"

#: Toxiproxy server, built from the Go module proxy.
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2"
TOXIPROXY_VERSION = "v2.12.0"
#: The Go release its go.mod asks for (its ``go`` line): the build's own module asks as much.
TOXIPROXY_GO = "1.23.0"

#: Minimum tool versions the set-up accepts.
MIN_JAVA_MAJOR = 17

#: Docker Compose v2, built from the Go module proxy when `docker compose` is absent. Built in its
#: own module (not `go install pkg@v`), because its go.mod has exclude directives.
COMPOSE_MODULE = "github.com/docker/compose/v2"
COMPOSE_VERSION = "v2.40.3"

#: The official Kafka image, used when present or pullable; otherwise a local stand-in is built.
#: Toxiproxy's image is always built here from the pinned binaries (they are built anyway for the
#: local backend), so no registry outside the default one is ever named or asked.
OFFICIAL_KAFKA_IMAGE = "apache/kafka"
#: Debian packages of the local base image (debootstrap --variant=minbase).
BASE_PACKAGES = ("openjdk-17-jre-headless",)

#: PySpark (pyproject pins the same version) and its Kafka connector, fetched from Maven Central
#: with its runtime dependencies. 4.0.0 is the newest Spark whose connector resolves there: for
#: 4.0.1 to 4.2.x spark-token-provider-kafka-0-10 is missing, for 4.3.0 the connector itself.
SPARK_VERSION = "4.0.0"
SPARK_KAFKA_CONNECTOR = f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY}"
#: Repositories Spark's parent POM adds next to Maven Central; the fetch routes them to Central
#: (the one repository Maven itself knows), so only Central is ever asked.
SPARK_EXTRA_REPOSITORIES = ("gcs-maven-central-mirror",)

#: ``transaction.version`` (KIP-890) by Kafka release line: the levels ``kafka-storage format
#: --feature transaction.version=N`` accepts, and the level it picks without the flag. Found by
#: formatting with each release (3.9.1, 4.0.0, 4.3.1, 4.4.0): 3.9 knows levels 1 and 2 only as
#: unstable (behind unstable.feature.versions.enable), so it takes 0 alone; from 4.0 on, 0..2 and
#: 2 by default. A newer release line than the last row is taken to be like it (its storage tool
#: and its brokers' SupportedFeatures have the last word: ``clusters/kafka/feature_levels.py``).
TRANSACTION_VERSIONS: tuple[tuple[tuple[int, int], tuple[int, ...], int], ...] = (
    ((3, 9), (0,), 0),
    ((4, 0), (0, 1, 2), 2),
)
#: Every level any release defines (the flag's range).
TRANSACTION_VERSION_RANGE = (0, 2)
