"""The Go client bridges (their sources beside this module, ``go_src/``), built once per client and version: the shared
protocol (``common/``) and the client's own file (``franz/``, ``sarama/``) are copied into a temporary
module whose go.mod requires that client at that version; ``go mod tidy`` resolves its dependencies
(from the module cache first, the Go module proxy for what is missing, through
``clusters.builds.golang.go_env``), and the binary goes into the cache under the client, the version and
a hash of the bridge's sources, so an edit of the bridge rebuilds it and a warm check is one stat.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from clusters.builds import cache, golang
from harness.base.errors import ConfigError, EnvironmentProblem
from harness.base.paths import cache_dir

log = logging.getLogger(__name__)

#: The bridges' Go sources: ``common/`` and one folder per client.
SOURCES = Path(__file__).resolve().parent / "go_src"
#: What the generated go.mod asks for at least (the clients' own go.mod may raise it; tidy does).
GO_DIRECTIVE = "1.22"
#: ``go list -m -versions``: one question to the module proxy, only when a version failed to build.
LIST_TIMEOUT_S = 120


@dataclass(frozen=True)
class GoClient:
    """One Go client library the bridge is built for."""

    #: the library's name in ``library:`` (``franz-go``)
    name: str
    #: its Go module
    module: str
    #: its folder of sources under ``go_src/``
    folder: str
    #: the oldest release the bridge's use of the library compiles against (and why)
    oldest: tuple[int, int, int]
    oldest_why: str
    #: it has a delivery timeout to set (franz-go's RecordDeliveryTimeout; sarama has none)
    delivery_timeout: bool = True
    #: files of its folder used only from this release on, and the ones used before it instead
    #: (``(release, from_it, before_it)``): an API the library added, chosen at build time
    variants: tuple[tuple[tuple[int, int, int], tuple[str, ...], tuple[str, ...]], ...] = ()

    def files(self, version: str, tests: bool = False) -> list[Path]:
        """The Go files of a build of ``version``: the shared ones, then this client's (with
        ``tests``, their ``_test.go`` files too: the Go tests run in such a module)."""
        v = release(version)
        skip = {f for at, since, before in self.variants for f in (before if v >= at else since)}
        return [p for folder in ("common", self.folder) for p in sorted((SOURCES / folder).glob("*.go"))
                if p.name not in skip and (tests or not p.name.endswith("_test.go"))]


def release(version: str) -> tuple[int, int, int]:
    """``1.18.1`` as ``(1, 18, 1)`` (the registry's pattern has made sure of the form)."""
    major, minor, patch = (int(x) for x in version.split("."))
    return major, minor, patch


def source_hash(client: GoClient, version: str) -> str:
    """A hash of every source file a build of ``version`` uses (names and contents)."""
    import hashlib

    h = hashlib.sha256()
    for f in client.files(version):
        h.update(f.parent.name.encode() + b"/" + f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def binary(client: GoClient, version: str) -> Path:
    """Where the bridge of ``client`` at ``version`` lives (changed sources: a new folder, rebuilt)."""
    return cache_dir() / "go-client" / client.name / version / source_hash(client, version) / f"{client.name}-bridge"


def ready(client: GoClient, version: str) -> Path | None:
    """The built bridge, if it is there (no building, no locking)."""
    target = binary(client, version)
    return target if target.is_file() and os.access(target, os.X_OK) else None


def go_mod(client: GoClient, version: str) -> str:
    return f"module eos-chaos/{client.folder}-bridge\n\ngo {GO_DIRECTIVE}\n\nrequire {client.module} v{version}\n"


def ensure(client: GoClient, version: str) -> Path:
    """The bridge of ``client`` at ``version``, built if missing. ``ConfigError`` for a release the
    bridge does not support or the module proxy does not have (naming the versions it has)."""
    if release(version) < client.oldest:
        oldest = ".".join(map(str, client.oldest))
        raise ConfigError(f"library {client.name}@{version}: the bridge needs {client.name} {oldest} or later "
                          f"({client.oldest_why})")
    built = ready(client, version)
    if built is not None:
        return built
    with cache.cache_lock():  # another workload may be building it: the second finds it built
        target = binary(client, version)
        if ready(client, version) is None:
            _build(client, version, target)
    return target


def _build(client: GoClient, version: str, target: Path) -> None:
    what = f"the {client.name} {version} client bridge"
    target.parent.parent.mkdir(parents=True, exist_ok=True)
    for old in target.parent.parent.glob("*"):
        if old != target.parent:
            shutil.rmtree(old, ignore_errors=True)  # built from sources that changed since
    with tempfile.TemporaryDirectory(dir=target.parent.parent, prefix="build-") as tmp:
        src = Path(tmp)
        assemble(client, version, src)
        log.info(f"{what}: resolving modules (go mod tidy)")
        _tidy(client, version, src)
        golang.build_go_module(src, target, what)


def assemble(client: GoClient, version: str, src: Path, tests: bool = False) -> None:
    """The module of ``client`` at ``version`` in ``src``: its files and go.mod (not yet tidied)."""
    for f in client.files(version, tests):
        shutil.copy(f, src / f.name)
    (src / "go.mod").write_text(go_mod(client, version))


def go_test(client: GoClient, version: str, src: Path) -> subprocess.CompletedProcess[str]:
    """``go test`` of the bridge's Go tests in a module of ``client`` at ``version`` assembled in
    ``src`` (its dependencies resolved as a build resolves them)."""
    assemble(client, version, src, tests=True)
    _tidy(client, version, src)
    return subprocess.run([shutil.which("go") or "go", "test", "-count=1", "."], cwd=src, capture_output=True, text=True,
                          timeout=cache.FETCH_TIMEOUT_S, env=dict(golang.go_env(), GOTOOLCHAIN="local"))


def _tidy(client: GoClient, version: str, src: Path) -> None:
    go = shutil.which("go")
    if go is None:
        raise EnvironmentProblem(f"`go` not found on PATH; the {client.name} client bridge is built with it "
                                 f"(apt-get install golang-go, Go {GO_DIRECTIVE}+)")
    try:
        proc = subprocess.run([go, "mod", "tidy"], cwd=src, capture_output=True, text=True,
                              timeout=cache.FETCH_TIMEOUT_S, env=dict(golang.go_env(), GOTOOLCHAIN="local"))
    except subprocess.TimeoutExpired as exc:
        raise EnvironmentProblem(f"`go mod tidy` of the {client.name} {version} client bridge did not finish "
                                 f"within {cache.FETCH_TIMEOUT_S}s") from exc
    if proc.returncode == 0:
        return
    out = proc.stdout + proc.stderr
    if re.search(r"unknown revision|invalid version|no matching versions|not found|not available|404|410", out):
        raise _missing(client, version, out)
    tail = "\n".join(out.strip().splitlines()[-15:])
    raise EnvironmentProblem(f"resolving the modules of the {client.name} {version} client bridge failed:\n{tail}")


def _missing(client: GoClient, version: str, out: str) -> ConfigError:
    known = known_versions(client)
    near = [v for v in known if v.split(".")[:2] == version.split(".")[:2]] or known[-8:]
    hint = f"; releases it has: {', '.join(near)}" if near else ""
    said = [line.strip() for line in out.splitlines() if re.search(r"server response|unknown revision|invalid version", line)]
    why = re.sub(r"https?://\S+", "(the proxy)", (said or out.strip().splitlines() or ["?"])[-1])
    return ConfigError(f"library {client.name}@{version}: the Go module proxy has no {client.module} v{version}"
                       f"{hint} (go: {why})")


def known_versions(client: GoClient) -> list[str]:
    """The releases of ``client`` the module proxy lists (``go list -m -versions``), oldest first;
    empty when it cannot be asked."""
    go = shutil.which("go")
    if go is None:
        return []
    try:
        proc = subprocess.run([go, "list", "-m", "-versions", client.module], capture_output=True, text=True,
                              timeout=LIST_TIMEOUT_S, env=dict(golang.go_env(), GOTOOLCHAIN="local", GOFLAGS=""),
                              cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        return []
    return [v.lstrip("v") for v in proc.stdout.split()[1:] if re.fullmatch(r"v\d+\.\d+\.\d+", v)]
