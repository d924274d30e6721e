"""Implementations of the ``Client`` protocol (harness/workloads/client.py), one module per client
library, and the table of them (``CLIENTS``): the one place that knows which libraries exist.

A workload entry names its library with ``library:`` (``client:`` holds that library's own
settings): ``NAME`` or, for a library whose entry has ``versions``, ``NAME@VERSION`` (``NAME``
alone: its default version). Each entry names its module and the classes there that implement the
three protocols; ``open_producer`` / ``open_reader`` / ``open_group_reader`` import that module
only when it is used, so a workload of one library never loads another. Adding a library: one
entry here and its module (docs/ADDING.md).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, cast, get_args

from clusters.builds import pins
from harness.base.errors import ConfigError
from harness.workloads.client import Client, GroupReader, Reader

#: What a library opens: a ``Client``, a ``Reader``, a ``GroupReader``.
Role = Literal["producer", "reader", "group_reader"]
ROLES: tuple[Role, ...] = get_args(Role)
#: The ``kafka-clients`` release ``java`` means without a version: the newest 4.x on Maven Central.
DEFAULT_JAVA_VERSION = pins.JAVA_CLIENT_VERSION
#: The franz-go release ``franz-go`` means without a version: the newest the Go module proxy served
#: here; franz-go speaks transaction.version 2 (KIP-890 part 2) from 1.19.0 on.
DEFAULT_FRANZ_VERSION = "1.22.3"
#: The last franz-go release before its transaction.version 2 support (the set-up builds it too).
FRANZ_PRE_TV2_VERSION = "1.18.1"
#: The IBM/sarama release ``sarama`` means without a version: the newest the Go module proxy served
#: here (no sarama speaks transaction.version 2).
DEFAULT_SARAMA_VERSION = "1.61.1"


@dataclass(frozen=True)
class Versions:
    """The versions a library takes (``NAME@VERSION``)."""

    #: what ``NAME`` alone means
    default: str
    #: a version must match this (whole)
    pattern: str
    #: how the pattern reads, in an error message
    spelled: str
    #: what a version names, in an error message and help texts ("a kafka-clients release")
    what: str
    #: an example for error messages
    example: str
    #: the versions ``eos-chaos setup`` makes ready ahead of any run
    setup: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClientLibrary:
    """One client library a workload may run on: its module, and in it the classes of the three
    protocols. Each class is opened with ``(VERSION,)`` -- only for a library with ``versions`` --
    and then the arguments of ``open_producer`` / ``open_reader`` / ``open_group_reader`` after
    ``library``."""

    name: str
    #: the module implementing it (imported when a workload opens it, never before)
    module: str
    #: its ``Client``: ``([version,] bootstrap, txn_id, transaction_timeout_ms, overrides)``
    producer: str
    #: its ``Reader``: ``([version,] bootstrap, group, partitions, overrides)``
    reader: str
    #: its ``GroupReader``: ``([version,] bootstrap, group, topics, overrides)``
    group_reader: str
    #: None: the library takes no version (the installed package is the one)
    versions: Versions | None = None
    #: makes one version ready before anything starts (the Java bridge fetched and compiled);
    #: ``ConfigError`` (exit 2) for a version that cannot be had. None: nothing to make
    prepare: Callable[[str], None] | None = None
    #: runs a txn-producer's plain, non-transactional sends (``transactional: false``)
    plain_sends: bool = False
    #: runs in a JVM of its own, whose start-up ``eos-chaos bench txn-rate`` measures
    jvm: bool = False
    #: its clients run side by side in threads of one workload process, each on its own
    #: (a txn-producer's ``producers``): in-process clients whose blocking calls let the others run
    threads: bool = False
    #: the ``client:`` settings it takes, by Java's names (``setting_names``): a scenario giving
    #: another is refused before anything starts. None: the library's own check decides when a
    #: client opens (librdkafka refuses an unknown name; Java warns and ignores it)
    settings: Callable[[], frozenset[str]] | None = None

    def factory(self, role: Role) -> Callable[..., Any]:
        """The class of ``role`` (``producer``, ``reader``, ``group_reader``), its module imported now."""
        return cast(Callable[..., Any], getattr(importlib.import_module(self.module), getattr(self, role)))


def _settings(name: str) -> frozenset[str]:
    # imported here: the table stays cheap to import, and kafka-python's names come from kafka-python
    from harness.workloads.clients import setting_names

    if name == "kafka-python":
        return setting_names.kafka_python_settings()
    return setting_names.FRANZ_GO_SETTINGS if name == "franz-go" else setting_names.SARAMA_SETTINGS


def _build_java_bridge(version: str) -> None:
    # imported here: the table stays cheap to import (the CLI's --help reads it)
    from harness.workloads.clients import java_build

    java_build.ensure(version)


def _build_go_bridge(name: str, version: str) -> None:
    from harness.workloads.clients import gobridge

    gobridge.prepare(name, version)


_RELEASE = (r"\d+\.\d+\.\d+", "MAJOR.MINOR.PATCH")


#: Every client library a workload may name, by name. The Go bridges are built when a run first needs
#: them, never by ``setup --all``: `make test` runs none, and a cold franz-go build is a minute of Go.
CLIENTS: dict[str, ClientLibrary] = {c.name: c for c in (
    ClientLibrary("confluent-kafka", "harness.workloads.clients.confluent", "ConfluentClient", "ConfluentReader",
                  "ConfluentGroupReader", plain_sends=True, threads=True),
    ClientLibrary("java", "harness.workloads.clients.java", "JavaClient", "JavaReader", "JavaGroupReader",
                  versions=Versions(DEFAULT_JAVA_VERSION, r"\d+\.\d+\.\d+", "MAJOR.MINOR.PATCH",
                                    "a kafka-clients release", "3.9.1", setup=(DEFAULT_JAVA_VERSION, pins.JAVA_CLIENT_3X_VERSION)),
                  prepare=_build_java_bridge, jvm=True),
    ClientLibrary("kafka-python", "harness.workloads.clients.kafka_python", "KafkaPythonClient", "KafkaPythonReader",
                  "KafkaPythonGroupReader", settings=partial(_settings, "kafka-python")),
    ClientLibrary("franz-go", "harness.workloads.clients.gobridge", "FranzClient", "FranzReader", "FranzGroupReader",
                  versions=Versions(DEFAULT_FRANZ_VERSION, *_RELEASE, "a franz-go release (Go module github.com/twmb/franz-go)",
                                    FRANZ_PRE_TV2_VERSION),
                  prepare=partial(_build_go_bridge, "franz-go"), settings=partial(_settings, "franz-go")),
    ClientLibrary("sarama", "harness.workloads.clients.gobridge", "SaramaClient", "SaramaReader", "SaramaGroupReader",
                  versions=Versions(DEFAULT_SARAMA_VERSION, *_RELEASE, "an IBM/sarama release (Go module github.com/IBM/sarama)",
                                    "1.45.2"),
                  prepare=partial(_build_go_bridge, "sarama"), settings=partial(_settings, "sarama")),
)}
DEFAULT_LIBRARY = "confluent-kafka"
#: Every client library's name.
LIBRARIES = tuple(CLIENTS)


@dataclass(frozen=True)
class Library:
    """A parsed ``library:`` value."""

    name: str
    version: str | None = None

    def __str__(self) -> str:
        return f"{self.name}@{self.version}" if self.version else self.name

    @property
    def entry(self) -> ClientLibrary:
        return CLIENTS[self.name]

    def open(self, role: Role, *args: Any) -> Any:
        """An instance of its ``role`` class, opened with this version (if it has one) and ``args``."""
        return self.entry.factory(role)(*([self.version] if self.version else []), *args)


def spelled() -> str:
    """The libraries as help texts list them: ``confluent-kafka, java or java@VERSION, ...``."""
    return ", ".join(f"{c.name} or {c.name}@VERSION" if c.versions else c.name for c in CLIENTS.values())


def _versioned() -> list[ClientLibrary]:
    return [c for c in CLIENTS.values() if c.versions]


def parse(spec: str) -> Library:
    """``NAME`` or ``NAME@VERSION`` as a ``Library``; ValueError saying what is allowed."""
    name, _, version = spec.strip().partition("@")
    entry = CLIENTS.get(name)
    if entry is None:
        hints = "; ".join(f"{c.name}@VERSION picks {c.versions.what}, e.g. {c.name}@{c.versions.example}"
                          for c in _versioned() if c.versions)
        raise ValueError(f"library {spec!r}: unknown client library; allowed: {', '.join(LIBRARIES)}"
                         + (f" ({hints})" if hints else ""))
    if entry.versions is None:
        if version:
            takers = [c.name for c in _versioned()]
            names = " and ".join(takers) if len(takers) < 3 else f"{', '.join(takers[:-1])} and {takers[-1]}"
            raise ValueError(f"library {spec!r}: only {names} take{'s' if len(takers) == 1 else ''} "
                             f"a version ({', '.join(f'{n}@VERSION' for n in takers)})")
        return Library(name)
    version = version or entry.versions.default
    if not re.fullmatch(entry.versions.pattern, version):
        raise ValueError(f"library {spec!r}: {version!r} is not a release version; expected "
                         f"{name}@{entry.versions.spelled}, e.g. {name}@{entry.versions.default}")
    return Library(name, version)


def check_settings(library: str, settings: dict[str, Any]) -> None:
    """Raise ValueError naming the ``client:`` settings of ``settings`` that ``library`` does not
    take, and the ones it does (for a library whose entry lists them)."""
    from harness.workloads.clients import setting_names

    lib = parse(library)
    takes = lib.entry.settings
    if takes is None:
        return
    bad = setting_names.unknown(settings, takes())
    if bad:
        theirs = ", ".join(f"{a} (read as {b})" for a, b in setting_names.LIBRDKAFKA_NAMES.items())
        raise ValueError(f"client setting{'s' if len(bad) > 1 else ''} {', '.join(bad)}: not taken by {lib}; it takes "
                         f"{', '.join(sorted(takes()))}, and librdkafka's {theirs}")


def setup_specs() -> list[str]:
    """``NAME@VERSION`` of every version ``eos-chaos setup`` makes ready."""
    return [f"{c.name}@{v}" for c in _versioned() if c.versions for v in c.versions.setup]


def prepare(libraries: Iterable[str], flag: str | None = None) -> None:
    """Make every library of ``libraries`` ready to run before anything starts, each version once
    (the Java bridge of each ``java@VERSION`` is fetched and compiled; cached). ``ConfigError``
    (exit 2) for a version that cannot be had (a release Maven Central lacks), naming it (and
    ``flag``, the option that asked for it, if given)."""
    wanted = sorted({(lib.name, lib.version) for lib in map(parse, libraries) if lib.version})
    for name, version in wanted:
        make = CLIENTS[name].prepare
        if make is None:
            continue
        try:
            make(version)
        except ConfigError as exc:
            if flag is None:
                raise
            raise ConfigError(f"{flag}: {exc}") from None


def open_producer(library: str, bootstrap: str, txn_id: str, transaction_timeout_ms: int,
                  overrides: dict[str, Any]) -> Client:
    """A transactional producer of ``library`` for ``txn_id`` (``overrides``: the library's own settings)."""
    return cast(Client, parse(library).open("producer", bootstrap, txn_id, transaction_timeout_ms, overrides))


def open_reader(library: str, bootstrap: str, group: str, partitions: list[tuple[str, int]],
                overrides: dict[str, Any]) -> Reader:
    """A read_committed reader of ``library`` over ``partitions`` from offset 0 (assign mode)."""
    return cast(Reader, parse(library).open("reader", bootstrap, group, partitions, overrides))


def open_group_reader(library: str, bootstrap: str, group: str, topics: list[str],
                      overrides: dict[str, Any]) -> GroupReader:
    """A read_committed member of consumer group ``group`` of ``library``, subscribed to ``topics``."""
    return cast(GroupReader, parse(library).open("group_reader", bootstrap, group, topics, overrides))
