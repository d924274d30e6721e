"""Go modules built into the cache: the toolchain's caches inside ours, a digest of a module's
sources to key its binary by, and a build renamed into place when complete."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clusters.builds.cache import FETCH_TIMEOUT_S, require_tool
from harness.base.errors import EnvironmentProblem
from harness.base.paths import cache_dir

log = logging.getLogger(__name__)


def go_env() -> dict[str, str]:
    """Environment for Go builds: module and build caches inside our cache (so "empty cache" means
    empty), writable so that a plain `rm -rf` of the cache works; static binaries."""
    return dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod -buildvcs=false -modcacherw",
                GOMODCACHE=str(cache_dir() / "go" / "mod"), GOCACHE=str(cache_dir() / "go" / "build"))


def run_go(cmd: list[str], what: str, env: dict[str, str], cwd: Path | None = None) -> None:
    """Run a Go build; ``EnvironmentProblem`` with the tail of its output if it fails."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S, env=env, cwd=cwd)
    except subprocess.TimeoutExpired as exc:
        raise EnvironmentProblem(f"`go {cmd[1]}` of {what} did not finish within {FETCH_TIMEOUT_S}s") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise EnvironmentProblem(f"building {what} failed (exit {proc.returncode}):\n{tail}")


def go_source_digest(src: Path) -> str:
    """A hash of the Go module at ``src`` as built: go.mod, go.sum and the .go files but tests, by
    name and content (a binary cached under it is rebuilt when any of them changes)."""
    files = sorted(p for p in src.iterdir() if p.name in ("go.mod", "go.sum") or
                   (p.suffix == ".go" and not p.name.endswith("_test.go")))
    return hashlib.sha256(b"".join(p.name.encode() + b"\0" + p.read_bytes() for p in files)).hexdigest()[:16]


def go_directive(src: Path) -> str:
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
    go = require_tool("go", f"build {what} ({src})", f"apt-get install golang-go (Go {go_directive(src)}+)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        built = Path(tmp) / target.name
        # GOTOOLCHAIN=local: never fetch another Go (an older one fails naming the release go.mod needs)
        cmd = [go, "build", "-trimpath", "-o", str(built), "."]
        run_go(cmd, f"{what} ({src})", dict(go_env(), GOTOOLCHAIN="local"), cwd=src)
        built.rename(target)
    log.info(f"{what}: built {target}")
    return target


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
    go = require_tool("go", f"build {', '.join(p.what for p in todo)}", f"apt-get install golang-go (Go {newest}+)")
    log.info(f"{', '.join(p.what for p in todo)}: building with Go")
    cache_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        (Path(tmp) / "go.mod").write_text(_build_module(todo, newest))
        out = Path(tmp) / "bin"
        out.mkdir()
        # no symbol table nor DWARF (-s -w): a shorter link; a panic's trace keeps its function names
        cmd = [go, "build", "-trimpath", "-ldflags=-s -w", "-o", f"{out}/", *(p.package for p in todo)]
        run_go(cmd, ", ".join(p.what for p in todo), go_env(), cwd=Path(tmp))
        for p in todo:
            p.target.parent.mkdir(parents=True, exist_ok=True)
            (out / _binary_name(p.package)).rename(p.target)
            log.info(f"{p.what}: built {p.target}")
    return [p.target for p in programs]


def _build_module(todo: Sequence[GoProgram], go: str) -> str:
    """The go.mod of the build's own module, requiring each program's module: `go build` of all their
    main packages at once, each at its module's requirements (none of them replaces or excludes)."""
    mod = [f"module eos-chaos/setup\n\ngo {go}\n"]
    for module in dict.fromkeys(p.module for p in todo):
        prog = next(p for p in todo if p.module == module)
        mod.append(f"require {module} {prog.version}")
        if prog.source is not None:
            mod.append(f"replace {module} => {prog.source}")
    return "\n".join(mod) + "\n"


def _binary_name(package: str) -> str:
    """What `go build -o DIR/` names a main package's binary: its last path element, not a ``/vN``."""
    parts = package.split("/")
    return parts[-2] if re.fullmatch(r"v\d+", parts[-1]) and len(parts) > 1 else parts[-1]
