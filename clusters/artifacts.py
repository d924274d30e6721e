"""Fetch and cache what a cluster runs: Kafka jars from Maven Central, Toxiproxy built with Go.

Only package registries are used: Maven resolves Kafka and its runtime dependencies, the Go module
proxy serves Toxiproxy's source. Everything lands in the cache (see ``harness.base.paths.cache_dir``)
behind a marker file written last, so a half-finished fetch is never mistaken for a good one and a
warm set-up only stats a few files.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import hashlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from clusters import pins
from harness.base.errors import ConfigError, EnvironmentProblem
from harness.base.paths import cache_dir

log = logging.getLogger(__name__)

_VERSION_RE = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")
#: Cold fetches on a slow link: Maven pulls ~45 MB, Go ~30 MB of modules and compiles.
FETCH_TIMEOUT_S = 900



@dataclass(frozen=True)
class Artifacts:
    """Paths of a ready set of artifacts."""

    kafka_version: str
    kafka_libs: Path
    toxiproxy_bin: Path
    java: Path
    #: the wire proxy (clusters/kwire/), built from the repository's own Go source
    kwire_bin: Path | None = None


def parse_kafka_version(version: str, flag: str = "--kafka-version") -> tuple[int, int, int]:
    """Validate a ``--kafka-version`` value (or one of ``flag``'s); raise ``ConfigError`` naming
    the flag and what is allowed."""
    m = _VERSION_RE.match(version.strip())
    if not m:
        raise ConfigError(
            f"{flag} {version!r} is not a release version; expected MAJOR.MINOR.PATCH, "
            f"for example {pins.KAFKA_VERSION}"
        )
    parsed = (int(m[1]), int(m[2]), int(m[3]))
    if parsed < pins.MIN_KAFKA_VERSION:
        low = ".".join(map(str, pins.MIN_KAFKA_VERSION))
        raise ConfigError(
            f"{flag} {version} is older than {low}: the harness needs KRaft with advertised "
            f"controller listeners (KIP-853). Use {low} or newer (default {pins.KAFKA_VERSION}); what older "
            "releases would take: docs/MATRIX.md, Older Kafka releases."
        )
    return parsed


def find_java() -> tuple[Path, int]:
    """The Java the brokers run with and its major version; ``EnvironmentProblem`` if unusable."""
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home) / "bin" / "java" if home else None
    java = str(candidate) if candidate and candidate.exists() else shutil.which("java")
    if not java:
        raise EnvironmentProblem(
            f"Java not found (no `java` on PATH, JAVA_HOME={home!r}). Install a JDK {pins.MIN_JAVA_MAJOR}+ "
            "(Debian: apt-get install openjdk-17-jdk-headless) or set JAVA_HOME."
        )
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentProblem(f"could not run {java} -version: {exc}") from exc
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        raise EnvironmentProblem(f"could not read the Java version from `{java} -version`: {out.stderr.strip()!r}")
    major = int(m[1]) if m[1] != "1" else int(m[2] or 0)
    if major < pins.MIN_JAVA_MAJOR:
        raise EnvironmentProblem(
            f"{java} is Java {major}; Kafka 4.x brokers need Java {pins.MIN_JAVA_MAJOR}+. "
            "Install a newer JDK or point JAVA_HOME at one."
        )
    return Path(java), major


def _require_tool(name: str, why: str, install: str) -> str:
    path = shutil.which(name)
    if not path:
        raise EnvironmentProblem(f"`{name}` not found on PATH; it is needed to {why}. Install it: {install}")
    return path


def kafka_dir(version: str) -> Path:
    return cache_dir() / "kafka" / version


def toxiproxy_bin() -> Path:
    return cache_dir() / "toxiproxy" / pins.TOXIPROXY_VERSION / "toxiproxy-server"


def toxiproxy_cli() -> Path:
    """The CLI, which the Toxiproxy container image carries for its healthcheck."""
    return toxiproxy_bin().with_name("toxiproxy-cli")


def _kafka_pom(version: str, artifact: str = f"kafka_{pins.SCALA_BINARY}") -> str:
    excl = "".join(
        f"<exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>"
        for g, a in (e.split(":") for e in pins.KAFKA_EXCLUDES)
    )
    deps = [
        f"<dependency><groupId>org.apache.kafka</groupId><artifactId>{artifact}</artifactId>"
        f"<version>{version}</version><exclusions>{excl}</exclusions></dependency>",
        f"<dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId>"
        f"<version>{pins.LOG4J_VERSION}</version></dependency>",
        f"<dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId>"
        f"<version>{pins.LOG4J_VERSION}</version></dependency>",
        # Kafka's POMs still say slf4j-api 1.7; the log4j2 binding and Kafka itself need 2.x.
        f"<dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId>"
        f"<version>{pins.SLF4J_VERSION}</version></dependency>",
    ]
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>eos-chaos</groupId><artifactId>kafka-runtime</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{''.join(deps)}</dependencies></project>\n"
    )


def _fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def kafka_ready(version: str) -> Path | None:
    """The cached jar folder of ``version`` if a complete fetch of the current pins is there."""
    d = kafka_dir(version)
    marker = d / ".complete"
    if marker.is_file() and marker.read_text().strip() == _fingerprint(_kafka_pom(version)):
        return d / "libs"
    return None


def kafka_tools_dir(version: str = pins.KAFKA_TOOLS_VERSION) -> Path:
    return cache_dir() / "kafka-tools" / version


def kafka_tools_ready(version: str = pins.KAFKA_TOOLS_VERSION) -> Path | None:
    """The cached jar folder of Kafka's tools if a complete fetch is there (no lock, no fetch)."""
    return maven_ready(_kafka_pom(version, "kafka-tools"), kafka_tools_dir(version))


def fetch_kafka_tools(version: str = pins.KAFKA_TOOLS_VERSION) -> Path:
    """Kafka's tools jar (ProducerPerformance, TransactionalMessageCopier) and its dependencies, in a
    folder of their own."""
    return fetch_kafka(version, artifact="kafka-tools", d=kafka_tools_dir(version))


def fetch_kafka(version: str, artifact: str = f"kafka_{pins.SCALA_BINARY}", d: Path | None = None,
                flag: str = "--kafka-version") -> Path:
    """Collect ``kafka_2.13:version`` and its runtime dependencies into the cache; return the libs
    folder. A release Maven Central lacks is a ``ConfigError`` naming ``flag``."""
    parse_kafka_version(version, flag)
    coords = f"org.apache.kafka:{artifact}:jar:{version}"

    def missing(out: str) -> ConfigError | None:
        # Maven says "Could not find artifact X" or, once the miss is cached, "X was not found".
        if f"Could not find artifact {coords}" in out or f"{coords} was not found" in out:
            return ConfigError(f"{flag} {version}: org.apache.kafka:{artifact}:{version} is not on "
                               f"Maven Central. Use a released version (default {pins.KAFKA_VERSION}).")
        return None

    return _maven_fetch(f"{artifact} {version}", _kafka_pom(version, artifact), d or kafka_dir(version), missing)


def spark_kafka_dir() -> Path:
    return cache_dir() / "spark-kafka" / pins.SPARK_VERSION


def _spark_kafka_pom() -> str:
    group, artifact = pins.SPARK_KAFKA_CONNECTOR.split(":")
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>eos-chaos</groupId><artifactId>spark-kafka</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies><dependency><groupId>{group}</groupId>"
        f"<artifactId>{artifact}</artifactId><version>{pins.SPARK_VERSION}</version></dependency>"
        "</dependencies></project>\n"
    )


def spark_kafka_ready() -> list[Path] | None:
    """The connector's jars (those PySpark does not ship already) if a complete fetch is cached."""
    d = spark_kafka_dir()
    marker = d / ".complete"
    if marker.is_file() and marker.read_text().strip() == _fingerprint(_spark_kafka_pom()):
        return sorted((d / "libs").glob("*.jar"))
    return None


def fetch_spark_kafka() -> list[Path]:
    """Spark's Kafka connector for the pinned PySpark, with the runtime dependencies PySpark's own
    jars lack; returns the jar paths for ``spark.jars``."""
    libs = _maven_fetch(f"spark-sql-kafka {pins.SPARK_VERSION}", _spark_kafka_pom(), spark_kafka_dir(),
                        settings=_route_to_central(pins.SPARK_EXTRA_REPOSITORIES))
    shipped = {_artifact_name(p) for p in pyspark_jars()}
    for jar in libs.glob("*.jar"):
        if _artifact_name(jar) in shipped:
            jar.unlink()  # two versions of one library on the classpath: whichever loads first wins
    return sorted(libs.glob("*.jar"))


def pyspark_jars() -> list[Path]:
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise EnvironmentProblem("pyspark is not installed (make setup installs it with the project)")
    return list((Path(spec.origin).parent / "jars").glob("*.jar"))


def _artifact_name(jar: Path) -> str:
    """``kafka-clients-3.9.0.jar`` -> ``kafka-clients`` (the name without its version)."""
    return re.sub(r"-\d[\w.+-]*$", "", jar.stem)


def _route_to_central(repo_ids: tuple[str, ...]) -> str:
    """A Maven settings file that mirrors ``repo_ids`` to Maven Central, at the address Maven's own
    super POM gives for it (so this project names no repository host of its own)."""
    import zipfile

    mvn = Path(_require_tool("mvn", "fetch jars from Maven Central", "apt-get install maven")).resolve()
    jars = sorted((mvn.parent.parent / "lib").glob("maven-model-builder-*.jar"))
    if not jars:
        raise EnvironmentProblem(f"cannot find Maven's maven-model-builder jar under {mvn.parent.parent / 'lib'}")
    with zipfile.ZipFile(jars[0]) as z:
        super_pom = z.read("org/apache/maven/model/pom-4.0.0.xml").decode()
    m = re.search(r"<repository>\s*<id>central</id>.*?<url>(.*?)</url>", super_pom, re.S)
    if not m:
        raise EnvironmentProblem(f"{jars[0]} has no central repository in its super POM")
    mirrors = "".join(f"<mirror><id>{r}-via-central</id><mirrorOf>{r}</mirrorOf><url>{m[1]}</url></mirror>"
                      for r in repo_ids)
    return f"<settings><mirrors>{mirrors}</mirrors></settings>\n"


def _maven_fetch(what: str, pom: str, d: Path, missing: Callable[[str], ConfigError | None] | None = None,
                 settings: str | None = None) -> Path:
    """Resolve ``pom``'s runtime dependencies into ``d/libs`` (cached behind a marker of the POM)."""
    marker = d / ".complete"
    if marker.is_file() and marker.read_text().strip() == _fingerprint(pom):
        log.info(f"{what}: cached at {d / 'libs'}")
        return d / "libs"
    mvn = _require_tool("mvn", "fetch jars from Maven Central", "apt-get install maven")
    d.mkdir(parents=True, exist_ok=True)
    log.info(f"{what}: resolving it and its runtime dependencies with Maven")
    with tempfile.TemporaryDirectory(dir=d) as tmp:
        (Path(tmp) / "pom.xml").write_text(pom)
        libs_tmp = Path(tmp) / "libs"
        cmd = [
            mvn, "-B", "-q", "-U", "-f", str(Path(tmp) / "pom.xml"),
            f"-Dmaven.repo.local={cache_dir() / 'm2'}",
            "dependency:copy-dependencies", f"-DoutputDirectory={libs_tmp}", "-DincludeScope=runtime",
        ]
        if settings is not None:
            (Path(tmp) / "settings.xml").write_text(settings)
            cmd[1:1] = ["-gs", str(Path(tmp) / "settings.xml")]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise EnvironmentProblem(f"Maven did not finish fetching {what} within {FETCH_TIMEOUT_S}s") from exc
        if proc.returncode != 0:
            out = proc.stdout + proc.stderr
            problem = missing(out) if missing else None
            if problem is not None:
                shutil.rmtree(d, ignore_errors=True)
                raise problem
            tail = "\n".join(out.strip().splitlines()[-15:])
            raise EnvironmentProblem(f"Maven could not fetch {what} (exit {proc.returncode}):\n{tail}")
        libs = d / "libs"
        if libs.exists():
            shutil.rmtree(libs)
        libs_tmp.rename(libs)
    (d / "pom.xml").write_text(pom)
    marker.write_text(_fingerprint(pom) + "\n")
    log.info(f"{what}: {len(list(libs.glob('*.jar')))} jars in {libs}")
    return libs


def maven_fetch(what: str, pom: str, d: Path, missing: Callable[[str], ConfigError | None] | None = None) -> Path:
    """Resolve ``pom``'s runtime dependencies from Maven Central into ``d/libs``, cached behind a
    marker of the POM (the libraries of the Java programs of clusters/javabuild.py)."""
    return _maven_fetch(what, pom, d, missing)


def maven_ready(pom: str, d: Path) -> Path | None:
    """``d/libs`` if a complete ``maven_fetch`` of ``pom`` is there (no locking, no fetching)."""
    marker = d / ".complete"
    return d / "libs" if marker.is_file() and marker.read_text().strip() == _fingerprint(pom) else None


@contextlib.contextmanager
def cache_lock() -> Iterator[None]:
    """Hold the set-up lock of the cache (builds that share it must not race)."""
    with _cache_lock():
        yield


def go_env() -> dict[str, str]:
    """Environment for Go builds: module and build caches inside our cache (so "empty cache" means
    empty), writable so that a plain `rm -rf` of the cache works; static binaries."""
    return dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod -buildvcs=false -modcacherw",
                GOMODCACHE=str(cache_dir() / "go" / "mod"), GOCACHE=str(cache_dir() / "go" / "build"))


def _run_go(cmd: list[str], what: str, env: dict[str, str], cwd: Path | None = None) -> None:
    """Run a Go build; ``EnvironmentProblem`` with the tail of its output if it fails."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S, env=env, cwd=cwd)
    except subprocess.TimeoutExpired as exc:
        raise EnvironmentProblem(f"`go {cmd[1]}` of {what} did not finish within {FETCH_TIMEOUT_S}s") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise EnvironmentProblem(f"building {what} failed (exit {proc.returncode}):\n{tail}")


@dataclass(frozen=True)
class GoProgram:
    """A Go program the set-up builds: its main package, the module holding it at a version (or in
    this repository, at ``source``), the Go release that module asks for, and where its binary goes."""

    what: str
    package: str
    module: str
    version: str
    go: str
    target: Path
    source: Path | None = None

    @property
    def built(self) -> bool:
        return self.target.is_file() and os.access(self.target, os.X_OK)


def toxiproxy_program(cmd: str = "server") -> GoProgram:
    """Toxiproxy's server (``cmd/server``) or its CLI (``cmd/cli``, for the compose image only)."""
    return GoProgram(f"toxiproxy {pins.TOXIPROXY_VERSION} {cmd}", f"{pins.TOXIPROXY_MODULE}/cmd/{cmd}",
                     pins.TOXIPROXY_MODULE, pins.TOXIPROXY_VERSION, pins.TOXIPROXY_GO,
                     toxiproxy_bin() if cmd == "server" else toxiproxy_cli())


def build_go_programs(programs: Sequence[GoProgram]) -> list[Path]:
    """The binaries of ``programs``, those not in the cache built by one `go build` (the standard
    library and the runtime compile once for all, not once per program: a cold set-up's Go time was
    mostly that, twice at once on two cores). Each binary is renamed into place last, so one there is
    complete. The caller holds ``cache_lock``; dependencies come from the Go module proxy."""
    todo = [p for p in programs if not p.built]
    for p in programs:
        if p not in todo:
            log.info(f"{p.what}: cached at {p.target}")
    if not todo:
        return [p.target for p in programs]
    newest = max((p.go for p in todo), key=lambda v: tuple(int(n) for n in re.findall(r"\d+", v)))
    go = _require_tool("go", f"build {', '.join(p.what for p in todo)}", f"apt-get install golang-go (Go {newest}+)")
    log.info(f"{', '.join(p.what for p in todo)}: building with Go")
    cache_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        # a module of the build's own that requires each program's module: `go build` of all their
        # main packages at once, each at its module's requirements (none of them replaces or excludes)
        mod = [f"module eos-chaos/setup\n\ngo {newest}\n"]
        for module in dict.fromkeys(p.module for p in todo):
            prog = next(p for p in todo if p.module == module)
            mod.append(f"require {module} {prog.version}")
            if prog.source is not None:
                mod.append(f"replace {module} => {prog.source}")
        (Path(tmp) / "go.mod").write_text("\n".join(mod) + "\n")
        out = Path(tmp) / "bin"
        out.mkdir()
        # no symbol table nor DWARF (-s -w): a shorter link; a panic's trace keeps its function names
        cmd = [go, "build", "-trimpath", "-ldflags=-s -w", "-o", f"{out}/", *(p.package for p in todo)]
        _run_go(cmd, ", ".join(p.what for p in todo), go_env(), cwd=Path(tmp))
        for p in todo:
            p.target.parent.mkdir(parents=True, exist_ok=True)
            (out / _binary_name(p.package)).rename(p.target)
            log.info(f"{p.what}: built {p.target}")
    return [p.target for p in programs]


def _binary_name(package: str) -> str:
    """What `go build -o DIR/` names a main package's binary: its last path element, not a ``/vN``."""
    parts = package.split("/")
    return parts[-2] if re.fullmatch(r"v\d+", parts[-1]) and len(parts) > 1 else parts[-1]


def build_toxiproxy() -> Path:
    """Build the pinned Toxiproxy server from the Go module proxy into the cache; return the binary."""
    return build_go_programs([toxiproxy_program()])[0]


def build_toxiproxy_cli() -> Path:
    """Build the pinned Toxiproxy CLI (the compose image's healthcheck) into the cache; return the binary."""
    return build_go_programs([toxiproxy_program("cli")])[0]


def build_servers() -> tuple[Path, Path]:
    """Toxiproxy's server and the wire proxy, built in one `go build` if missing: what a local cluster runs."""
    tox, kwire = build_go_programs([toxiproxy_program(), kwire_program()])
    return tox, kwire


#: The wire proxy's Go source (standard library only: building it needs no network).
KWIRE_SOURCE = Path(__file__).resolve().parent / "kwire"


def go_source_digest(src: Path) -> str:
    """A hash of the Go module at ``src`` as built: go.mod, go.sum and the .go files but tests, by
    name and content (a binary cached under it is rebuilt when any of them changes)."""
    files = sorted(p for p in src.iterdir() if p.name in ("go.mod", "go.sum") or
                   (p.suffix == ".go" and not p.name.endswith("_test.go")))
    return hashlib.sha256(b"".join(p.name.encode() + b"\0" + p.read_bytes() for p in files)).hexdigest()[:16]


def _go_directive(src: Path) -> str:
    """The Go release ``src/go.mod`` asks for (its ``go`` line), for the message when Go is missing."""
    found = re.search(r"^go\s+(\S+)", (src / "go.mod").read_text(), re.MULTILINE)
    return found.group(1) if found else "?"


def build_go_module(src: Path, target: Path, what: str) -> Path:
    """Build the main package of the Go module at ``src`` into ``target`` unless a binary is there;
    return it. It is renamed into place last, so one there is a complete build. The caller holds
    ``cache_lock``; its dependencies come from the Go module proxy into ``go_env``'s caches."""
    if target.is_file() and os.access(target, os.X_OK):
        log.info(f"{what}: cached at {target}")
        return target
    go = _require_tool("go", f"build {what} ({src})", f"apt-get install golang-go (Go {_go_directive(src)}+)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        built = Path(tmp) / target.name
        # GOTOOLCHAIN=local: never fetch another Go (an older one fails naming the release go.mod needs)
        cmd = [go, "build", "-trimpath", "-o", str(built), "."]
        _run_go(cmd, f"{what} ({src})", dict(go_env(), GOTOOLCHAIN="local"), cwd=src)
        built.rename(target)
    log.info(f"{what}: built {target}")
    return target


def kwire_bin() -> Path:
    """The wire proxy binary of the current source (a changed source is a new path: rebuilt)."""
    return cache_dir() / "kwire" / go_source_digest(KWIRE_SOURCE) / "kwire"


def kwire_program() -> GoProgram:
    """The wire proxy, from its source in this repository (``clusters/kwire``)."""
    return GoProgram("kwire", "eos-chaos/kwire", "eos-chaos/kwire", "v0.0.0", _go_directive(KWIRE_SOURCE), kwire_bin(),
                     KWIRE_SOURCE)


def build_kwire() -> Path:
    """Build the wire proxy from ``clusters/kwire`` into the cache; return the binary."""
    return build_go_programs([kwire_program()])[0]


@contextlib.contextmanager
def _cache_lock() -> Iterator[None]:
    """Serialise set-ups: two at once would race on the same cache folders."""
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ensure(kafka_version: str = pins.KAFKA_VERSION, flag: str = "--kafka-version") -> Artifacts:
    """Everything a local cluster needs, fetched if missing (Kafka, Toxiproxy and the wire proxy in
    parallel); ``flag`` is what a bad or missing release is named by (the command's option)."""
    parse_kafka_version(kafka_version, flag)
    java, major = find_java()
    with _cache_lock():
        # Maven waits on the network while Go compiles (both Go programs in one build)
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            kafka_f = pool.submit(fetch_kafka, kafka_version, flag=flag)
            go_f = pool.submit(build_servers)
            libs, (tox, kwire) = kafka_f.result(), go_f.result()
    return Artifacts(kafka_version=kafka_version, kafka_libs=libs, toxiproxy_bin=tox, java=java, kwire_bin=kwire)


def ensure_spark() -> list[Path]:
    """Spark's Kafka connector jars, fetched if missing (serialised with the other set-ups)."""
    with _cache_lock():
        return fetch_spark_kafka()


def ready(kafka_version: str) -> Artifacts | None:
    """The artifacts if all are already cached, without fetching or locking (for ``cluster up``)."""
    libs = kafka_ready(kafka_version)
    tox, kwire = toxiproxy_bin(), kwire_bin()
    if libs is None or not tox.is_file() or not kwire.is_file():
        return None
    java, _ = find_java()
    return Artifacts(kafka_version=kafka_version, kafka_libs=libs, toxiproxy_bin=tox, java=java, kwire_bin=kwire)


def main(argv: Sequence[str]) -> int:
    """``python -m clusters.artifacts [--kafka-version V]``: ``ensure`` with the standard library
    only, so `make run` sets up beside pip's install of the dependencies. 0 when all is in the cache;
    1 otherwise, in one line: `eos-chaos setup` runs next and names the problem."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    version = argv[1] if len(argv) == 2 and argv[0] == "--kafka-version" else pins.KAFKA_VERSION
    try:
        ensure(version)
    except Exception as exc:  # noqa: BLE001 - any failure: the set-up after the install says it properly
        log.info(f"set-up beside the install stopped ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); "
                 "eos-chaos setup tries again")
        return 1
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
