"""Implementations of the ``Client`` protocol (harness/workloads/client.py), one module per client
library, and the choice between them.

A workload entry names its library with ``library:`` (``client:`` holds that library's own
settings): ``NAME`` or ``NAME@VERSION``. The names are ``LIBRARIES``; only ``java`` takes a
version (a ``kafka-clients`` release on Maven Central; none: ``DEFAULT_JAVA_VERSION``).
``open_producer`` / ``open_reader`` / ``open_group_reader`` import the chosen implementation only
when it is used, so a workload of one library never loads another.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from harness.base.errors import ConfigError
from harness.workloads.client import Client, GroupReader, Reader

DEFAULT_LIBRARY = "confluent-kafka"
#: Every client library a workload may name.
LIBRARIES = ("confluent-kafka", "java", "kafka-python")
#: The ``kafka-clients`` release ``java`` means without a version: the newest 4.x on Maven Central.
DEFAULT_JAVA_VERSION = "4.4.0"
_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+$")


@dataclass(frozen=True)
class Library:
    """A parsed ``library:`` value."""

    name: str
    version: str | None = None

    def __str__(self) -> str:
        return f"{self.name}@{self.version}" if self.version else self.name


def parse(spec: str) -> Library:
    """``NAME`` or ``NAME@VERSION`` as a ``Library``; ValueError saying what is allowed."""
    name, _, version = spec.strip().partition("@")
    if name not in LIBRARIES:
        raise ValueError(f"library {spec!r}: unknown client library; allowed: {', '.join(LIBRARIES)} "
                         f"(java@VERSION picks a kafka-clients release, e.g. java@3.9.1)")
    if name != "java":
        if version:
            raise ValueError(f"library {spec!r}: only java takes a version (java@VERSION)")
        return Library(name)
    version = version or DEFAULT_JAVA_VERSION
    if not _VERSION_RE.match(version):
        raise ValueError(f"library {spec!r}: {version!r} is not a release version; expected java@MAJOR.MINOR.PATCH, "
                         f"e.g. java@{DEFAULT_JAVA_VERSION}")
    return Library(name, version)


def prepare(libraries: Iterable[str], flag: str | None = None) -> None:
    """Make every library of ``libraries`` ready to run before anything starts: the Java bridge of
    each ``java@VERSION`` is fetched and compiled (once; cached). ``ConfigError`` (exit 2) for a
    release Maven Central lacks, naming it (and ``flag``, the option that asked for it, if given)."""
    versions = {lib.version for lib in map(parse, libraries) if lib.name == "java" and lib.version}
    if versions:
        from harness.workloads.clients import java_build

        for version in sorted(versions):
            try:
                java_build.ensure(version)
            except ConfigError as exc:
                if flag is None:
                    raise
                raise ConfigError(f"{flag}: {exc}") from None


def open_producer(library: str, bootstrap: str, txn_id: str, transaction_timeout_ms: int,
                  overrides: dict[str, Any]) -> Client:
    """A transactional producer of ``library`` for ``txn_id`` (``overrides``: the library's own settings)."""
    lib = parse(library)
    if lib.name == "confluent-kafka":
        from harness.workloads.clients.confluent import ConfluentClient

        return ConfluentClient(bootstrap, txn_id, transaction_timeout_ms, overrides)
    if lib.name == "kafka-python":
        from harness.workloads.clients.kafka_python import KafkaPythonClient

        return KafkaPythonClient(bootstrap, txn_id, transaction_timeout_ms, overrides)
    if lib.name == "java" and lib.version:
        from harness.workloads.clients.java import JavaClient

        return JavaClient(lib.version, bootstrap, txn_id, transaction_timeout_ms, overrides)
    raise NotImplementedError(f"no producer of {lib} yet")


def open_reader(library: str, bootstrap: str, group: str, partitions: list[tuple[str, int]],
                overrides: dict[str, Any]) -> Reader:
    """A read_committed reader of ``library`` over ``partitions`` from offset 0 (assign mode)."""
    lib = parse(library)
    if lib.name == "confluent-kafka":
        from harness.workloads.clients.confluent import ConfluentReader

        return ConfluentReader(bootstrap, group, partitions, overrides)
    if lib.name == "kafka-python":
        from harness.workloads.clients.kafka_python import KafkaPythonReader

        return KafkaPythonReader(bootstrap, group, partitions, overrides)
    if lib.name == "java" and lib.version:
        from harness.workloads.clients.java import JavaReader

        return JavaReader(lib.version, bootstrap, partitions, overrides)
    raise NotImplementedError(f"no reader of {lib} yet")


def open_group_reader(library: str, bootstrap: str, group: str, topics: list[str],
                      overrides: dict[str, Any]) -> GroupReader:
    """A read_committed member of consumer group ``group`` of ``library``, subscribed to ``topics``."""
    lib = parse(library)
    if lib.name == "confluent-kafka":
        from harness.workloads.clients.confluent import ConfluentGroupReader

        return ConfluentGroupReader(bootstrap, group, topics, overrides)
    if lib.name == "kafka-python":
        from harness.workloads.clients.kafka_python import KafkaPythonGroupReader

        return KafkaPythonGroupReader(bootstrap, group, topics, overrides)
    if lib.name == "java" and lib.version:
        from harness.workloads.clients.java import JavaGroupReader

        return JavaGroupReader(lib.version, bootstrap, group, topics, overrides)
    raise NotImplementedError(f"no group reader of {lib} yet")
