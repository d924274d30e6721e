"""Kafka's finalized features (``transaction.version``, ``metadata.version``, ...): read them back
from a running cluster and change one, the way ``kafka-features.sh describe / upgrade / downgrade``
does.

No Python client exposes DescribeFeatures or UpdateFeatures (confluent-kafka has neither), so this
speaks the two requests itself: one TCP connection, a deadline on every step. Why not Kafka's own
``FeatureCommand`` in a JVM: the tool lives in ``kafka-tools``, which the set-up does not fetch for
the broker (and 4.4.0's is not on Maven Central), and a JVM costs a second or two of a 2-core
machine per call, where the harness asks at every run start and every heal. The wire format is
small and stable (``clients/src/main/resources/common/message/*.json`` in Kafka):

- ApiVersions v4 (every release the harness runs, 3.9+): its response carries ``SupportedFeatures``
  (tag 0: the range this broker can run), ``FinalizedFeaturesEpoch`` (tag 1) and
  ``FinalizedFeatures`` (tag 2: the cluster's levels as this broker last saw them) as tagged fields.
  v4 rather than v3: v3 leaves out features whose minimum is 0 (KAFKA-17011), transaction.version
  among them. The ApiVersions response header is v0 (no tagged fields) whatever the version.
- UpdateFeatures v1 (3.9+), flexible: timeout, ``[feature, max level, upgrade type]``,
  validate-only. Any broker forwards it to the active controller.

A feature at level 0 is not finalized at all: it is absent from the list, and ``finalized`` reports
the features the harness cares about (``KNOWN``) as 0 then, as ``kafka-features.sh describe`` does.
"""

from __future__ import annotations

import io
import itertools
import socket
import struct
import time
from dataclasses import dataclass

from harness.base.errors import HarnessError, WaitTimeout
from harness.base.wait import wait_until

TRANSACTION_VERSION = "transaction.version"
METADATA_VERSION = "metadata.version"
#: Features reported even when not finalized (level 0 = absent from the broker's list).
KNOWN = (TRANSACTION_VERSION,)

API_VERSIONS, API_VERSIONS_V = 18, 4
UPDATE_FEATURES, UPDATE_FEATURES_V = 57, 1
#: UpdateFeatures' UpgradeType: 1 upgrade, 2 safe (lossless) downgrade, 3 unsafe downgrade.
UPGRADE, SAFE_DOWNGRADE = 1, 2
CLIENT_ID = "eos-chaos-features"
#: One request on a healthy cluster answers in milliseconds; the controller's write of a feature
#: record takes well under a second.
REQUEST_TIMEOUT_S = 10.0
#: Kafka error codes this module names in its messages (the rest are shown by number).
ERRORS = {35: "UNSUPPORTED_VERSION", 41: "NOT_CONTROLLER", 42: "INVALID_REQUEST", 51: "CONCURRENT_TRANSACTIONS",
          60: "INVALID_CONFIG", 7: "REQUEST_TIMED_OUT", 31: "CLUSTER_AUTHORIZATION_FAILED",
          96: "FEATURE_UPDATE_FAILED", 87: "INVALID_UPDATE_VERSION"}
#: Errors after which the same request may work a moment later (a controller election).
RETRIABLE = {7, 41, 51}


class FeatureError(HarnessError):
    """The cluster refused a feature request or answered something this module cannot read."""


# ---------------------------------------------------------------- the wire format
def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _compact_str(s: str | None) -> bytes:
    if s is None:
        return _uvarint(0)
    raw = s.encode()
    return _uvarint(len(raw) + 1) + raw


class BodyReader:
    """A cursor over a response body; every read past the end is a ``FeatureError``."""

    def __init__(self, data: bytes) -> None:
        self.buf = io.BytesIO(data)

    def take(self, n: int) -> bytes:
        b = self.buf.read(n)
        if len(b) != n:
            raise FeatureError(f"truncated response: wanted {n} bytes at offset {self.buf.tell() - len(b)}, got {len(b)}")
        return b

    def int8(self) -> int:
        return int(struct.unpack(">b", self.take(1))[0])

    def int16(self) -> int:
        return int(struct.unpack(">h", self.take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self.take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self.take(8))[0])

    def uvarint(self) -> int:
        n, shift = 0, 0
        while True:
            b = self.take(1)[0]
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7
            if shift > 28:
                raise FeatureError("malformed varint in response")

    def compact_str(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1).decode()

    def compact_len(self) -> int:
        """A compact array's length (-1 for null)."""
        return self.uvarint() - 1

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def done(self) -> bool:
        return self.buf.tell() == len(self.buf.getbuffer())


def request(api_key: int, version: int, correlation: int, body: bytes) -> bytes:
    """A size-prefixed request with header v2 (flexible): key, version, correlation id, client id
    (a classic int16 string even in v2), no tagged fields."""
    cid = CLIENT_ID.encode()
    header = struct.pack(">hhih", api_key, version, correlation, len(cid)) + cid + _uvarint(0)
    msg = header + body
    return struct.pack(">i", len(msg)) + msg


def api_versions_body() -> bytes:
    """ApiVersions v3/v4: client software name and version, no tagged fields."""
    return _compact_str("eos-chaos") + _compact_str("1") + _uvarint(0)


@dataclass(frozen=True)
class Features:
    """One broker's view: what it supports (name -> (min, max)) and what is finalized (name -> level)."""

    supported: dict[str, tuple[int, int]]
    finalized: dict[str, int]
    epoch: int


def parse_api_versions(body: bytes) -> Features:
    """An ApiVersions v3+ response body (after the v0 response header)."""
    r = BodyReader(body)
    error = r.int16()
    if error:
        raise FeatureError(f"ApiVersions v{API_VERSIONS_V} refused: {_error(error)}")
    for _ in range(max(r.compact_len(), 0)):
        r.int16(), r.int16(), r.int16()
        r.skip_tags()
    r.int32()  # throttle
    supported: dict[str, tuple[int, int]] = {}
    finalized: dict[str, int] = {}
    epoch = -1
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        field = BodyReader(r.take(size))
        if tag == 0:
            for _ in range(max(field.compact_len(), 0)):
                name = field.compact_str() or ""
                lo, hi = field.int16(), field.int16()
                field.skip_tags()
                supported[name] = (lo, hi)
        elif tag == 1:
            epoch = field.int64()
        elif tag == 2:
            for _ in range(max(field.compact_len(), 0)):
                name = field.compact_str() or ""
                max_level, _min_level = field.int16(), field.int16()
                field.skip_tags()
                finalized[name] = max_level
    return Features(supported, finalized, epoch)


def update_features_body(feature: str, level: int, upgrade_type: int, timeout_ms: int, validate_only: bool = False) -> bytes:
    """UpdateFeatures v1: timeout, one ``[feature, max level, upgrade type]``, validate-only."""
    update = _compact_str(feature) + struct.pack(">hb", level, upgrade_type) + _uvarint(0)
    return struct.pack(">i", timeout_ms) + _uvarint(2) + update + struct.pack(">?", validate_only) + _uvarint(0)


def parse_update_features(body: bytes) -> list[str]:
    """An UpdateFeatures v1 response (after its v1 header's tagged fields): the errors, empty when it worked."""
    r = BodyReader(body)
    r.int32()  # throttle
    problems = []
    code, msg = r.int16(), r.compact_str()
    if code:
        problems.append(f"{_error(code)}{': ' + msg if msg else ''}")
    for _ in range(max(r.compact_len(), 0)):
        name, code, msg = r.compact_str(), r.int16(), r.compact_str()
        r.skip_tags()
        if code:
            problems.append(f"{name}: {_error(code)}{': ' + msg if msg else ''}")
    return problems


def _error(code: int) -> str:
    return f"{ERRORS.get(code, 'error')} ({code})"


# ---------------------------------------------------------------- one connection
_correlation = itertools.count(1)


def _addresses(bootstrap: str) -> list[tuple[str, int]]:
    out = []
    for item in bootstrap.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            raise FeatureError(f"bootstrap {bootstrap!r}: {item!r} is not HOST:PORT")
        out.append((host, int(port)))
    return out


def _exchange(address: tuple[str, int], api_key: int, version: int, body: bytes, flexible_response: bool,
              timeout_s: float) -> bytes:
    """Send one request to ``address`` and return the response body (after its header)."""
    corr = next(_correlation)
    deadline = time.monotonic() + timeout_s
    with socket.create_connection(address, timeout=timeout_s) as sock:
        sock.sendall(request(api_key, version, corr, body))

        def recv(n: int) -> bytes:
            data = bytearray()
            while len(data) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no whole answer from {address[0]}:{address[1]} in {timeout_s:.0f}s")
                sock.settimeout(left)
                chunk = sock.recv(n - len(data))
                if not chunk:
                    raise ConnectionError(f"{address[0]}:{address[1]} closed the connection mid-answer")
                data += chunk
            return bytes(data)

        size = struct.unpack(">i", recv(4))[0]
        payload = BodyReader(recv(size))
    if payload.int32() != corr:
        raise FeatureError(f"{address[0]}:{address[1]} answered another request (correlation id)")
    if flexible_response:
        payload.skip_tags()
    return payload.take(size - payload.buf.tell())


def describe(address: tuple[str, int], timeout_s: float = REQUEST_TIMEOUT_S) -> Features:
    """One broker's supported and finalized features (ApiVersions)."""
    return parse_api_versions(_exchange(address, API_VERSIONS, API_VERSIONS_V, api_versions_body(), False, timeout_s))


# ---------------------------------------------------------------- what the harness calls
def _with_known(levels: dict[str, int]) -> dict[str, int]:
    return {**{k: 0 for k in KNOWN}, **levels}


def finalized(bootstrap: str, timeout_s: float = 30.0) -> dict[str, int]:
    """The cluster's finalized feature levels (``{"metadata.version": 33, "transaction.version": 2,
    ...}``; a known feature that is not finalized is 0), from the first broker of ``bootstrap``
    that answers with a finalized epoch; ``WaitTimeout`` naming the last error at the deadline."""
    return _with_known(supported_and_finalized(bootstrap, timeout_s).finalized)


def supported_and_finalized(bootstrap: str, timeout_s: float = 30.0) -> Features:
    """The first answer with a known finalized epoch among ``bootstrap``'s brokers (retried until
    ``timeout_s``): what that broker supports and what is finalized."""
    addresses = _addresses(bootstrap)
    errors: dict[str, str] = {}

    def ask() -> Features | None:
        for a in addresses:
            try:
                f = describe(a, min(REQUEST_TIMEOUT_S, timeout_s))
            except (OSError, FeatureError) as exc:
                errors[f"{a[0]}:{a[1]}"] = f"{type(exc).__name__}: {exc}"
                continue
            if f.epoch >= 0:
                return f
            errors[f"{a[0]}:{a[1]}"] = "no finalized features yet (epoch -1)"
        return None

    return wait_until(ask, timeout=timeout_s, what=f"the finalized features of the cluster at {bootstrap}",
                      state=lambda: f"last answers: {errors}")


def update(bootstrap: str, feature: str, level: int, timeout_s: float = 60.0) -> dict[str, int]:
    """Set ``feature`` to ``level`` as ``kafka-features.sh upgrade`` (higher) or ``downgrade``
    (lower; a safe downgrade, which Kafka refuses when it would lose metadata) does, then wait until
    every broker of ``bootstrap`` reports it. Returns the finalized levels then. ``FeatureError``
    when the cluster refuses (the reason Kafka gave), or the level is outside what it supports."""
    current = supported_and_finalized(bootstrap, timeout_s)
    have = _with_known(current.finalized).get(feature)
    lo, hi = current.supported.get(feature, (0, 0))
    if not lo <= level <= hi:
        what = f"support {lo}..{hi}" if feature in current.supported else "do not list it: level 0 only"
        raise FeatureError(f"{feature}={level} is not supported by this cluster's brokers (they {what}); "
                           f"allowed: {', '.join(map(str, range(lo, hi + 1)))}")
    if have != level:
        kind = UPGRADE if have is None or level > have else SAFE_DOWNGRADE
        body = update_features_body(feature, level, kind, int(min(timeout_s, REQUEST_TIMEOUT_S) * 1000))
        addresses = _addresses(bootstrap)
        last: list[str] = []
        refused: list[str] = []

        def send() -> bool:
            for a in addresses:
                try:
                    problems = parse_update_features(
                        _exchange(a, UPDATE_FEATURES, UPDATE_FEATURES_V, body, True, REQUEST_TIMEOUT_S))
                except (OSError, FeatureError) as exc:
                    last[:] = [f"{a[0]}:{a[1]}: {type(exc).__name__}: {exc}"]
                    continue
                if not problems:
                    return True
                last[:] = problems
                if not any(f"({c})" in p for p in problems for c in RETRIABLE):
                    refused[:] = problems  # Kafka said no: asking again will not change its mind
                    return False
            return False

        try:
            wait_until(send, timeout=timeout_s, what=f"the cluster to take {feature}={level}",
                       state=lambda: f"last: {last}", fatal=lambda: "; ".join(refused) or None)
        except WaitTimeout:
            if refused:
                raise FeatureError(f"the cluster refused {feature} {have} -> {level}: {'; '.join(refused)}") from None
            raise

    seen: list[int | None] = []

    def everywhere() -> dict[str, int] | None:
        views = [_with_known(describe(a).finalized) for a in _addresses(bootstrap)]
        seen[:] = [v.get(feature) for v in views]
        return views[0] if all(s == level for s in seen) else None

    return wait_until(everywhere, timeout=timeout_s, what=f"every broker to report {feature}={level}",
                      state=lambda: f"levels seen, broker by broker: {seen}")
