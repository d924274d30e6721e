"""Container images for the compose backend, without a registry.

Users with a registry get the official Kafka image (``apache/kafka``) at the pinned version. Where
it cannot be pulled, ``make images`` builds a stand-in from what the
set-up already caches: a Debian base made by debootstrap (mirror read from this machine's apt
sources) and imported with ``docker import``, the Kafka jars on top, and the static Toxiproxy
binaries in an empty image. Tags carry a hash of their inputs, so a build runs only when an input
changed.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import APIError, BuildError, ImageNotFound

from clusters.backends import artifacts
from clusters.backends.compose.engine import apt_install
from clusters.builds import pins
from clusters.builds.cache import cache_lock
from clusters.toxiproxy import toxiproxy_build
from clusters.wire import kwire_build
from harness.base.errors import EnvironmentProblem
from harness.base.paths import cache_dir

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent / "images"
#: A pull from a registry this machine cannot reach fails fast (name resolution); a slow one is cut.
PULL_TIMEOUT_S = 60
#: After a failed pull, later starts use the local images without asking the registry again for this
#: long (``eos-chaos images --pull`` asks now): a start should not wait on, or send, a doomed pull.
PULL_RETRY_AFTER_S = 24 * 3600
#: debootstrap of a minimal Debian with a JRE: ~1 min on a good mirror.
DEBOOTSTRAP_TIMEOUT_S = 1200


@dataclass(frozen=True)
class Images:
    kafka: str
    toxiproxy: str
    source: str  # "official kafka" or "local"


def _client() -> docker.DockerClient:
    return docker.from_env(timeout=600)


def _exists(client: docker.DockerClient, ref: str) -> bool:
    try:
        client.images.get(ref)
        return True
    except ImageNotFound:
        return False


def _digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def apt_source() -> tuple[str, str]:
    """(mirror URL, suite) of this machine's Debian, read from its apt sources (never hard-coded)."""
    suite = ""
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("VERSION_CODENAME="):
            suite = line.split("=", 1)[1].strip('"')
    mirror = ""
    for f in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        m = re.search(r"^URIs:\s*(\S+)", f.read_text(), re.M)
        if m:
            mirror = m[1]
            break
    if not mirror and Path("/etc/apt/sources.list").exists():
        m = re.search(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", Path("/etc/apt/sources.list").read_text(), re.M)
        if m:
            mirror, suite = m[1], suite or m[2]
    if not (mirror and suite):
        raise EnvironmentProblem("cannot read a Debian mirror and suite from /etc/apt/sources.list{,.d}: building the base image needs one")
    return mirror, suite


def base_image(client: docker.DockerClient) -> str:
    """A minimal Debian with a JRE, from debootstrap + ``docker import``."""
    _, suite = apt_source()
    tag = f"eos-chaos/base:{suite}-{_digest(suite, *pins.BASE_PACKAGES)}"
    if _exists(client, tag):
        return tag
    if not shutil.which("debootstrap"):
        apt_install(["debootstrap"], "building the base image")
    mirror, suite = apt_source()
    work = cache_dir() / "images"
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        rootfs = Path(tmp) / "rootfs"
        log.info(f"base image: debootstrap {suite} (minbase + {', '.join(pins.BASE_PACKAGES)}) from this machine's apt mirror")
        cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(pins.BASE_PACKAGES)}", suite, str(rootfs), mirror]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=DEBOOTSTRAP_TIMEOUT_S)
        if proc.returncode != 0:
            raise EnvironmentProblem(f"image build step 'debootstrap' failed (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-1500:]}")
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for f in (rootfs / junk).glob("*"):
                if f.is_file():
                    f.unlink()
        log.info(f"base image: docker import as {tag}")
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        imp = subprocess.run(["docker", "import", "-c", "ENV LANG=C.UTF-8", "-", tag], stdin=tar.stdout,
                             capture_output=True, text=True, timeout=DEBOOTSTRAP_TIMEOUT_S)
        tar.wait()
        if imp.returncode != 0 or tar.returncode != 0:
            raise EnvironmentProblem(f"image build step 'docker import' failed: {imp.stderr.strip()[-800:]}")
    return tag


def _build(client: docker.DockerClient, context: Path, tag: str, step: str, buildargs: dict[str, str] | None = None) -> None:
    try:
        client.images.build(path=str(context), tag=tag, buildargs=buildargs or {}, rm=True, pull=False)
    except (BuildError, APIError) as exc:
        log_lines = "".join(str(c.get("stream", c.get("error", ""))) for c in getattr(exc, "build_log", []) or [])
        raise EnvironmentProblem(f"image build step '{step}' failed: {exc}\n{log_lines[-1500:]}") from exc


def _ensure_built(client: docker.DockerClient, tag: str, step: str, files: dict[str, Path],
                  buildargs: dict[str, str] | None = None) -> str:
    """Build ``tag`` from a context holding ``files`` (name in context -> file or folder), unless present."""
    if _exists(client, tag):
        return tag
    log.info(f"{step}: building {tag}")
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        ctx = Path(tmp)
        for name, src in files.items():
            if src.is_dir():
                shutil.copytree(src, ctx / name)
            else:
                shutil.copy(src, ctx / name)
        _build(client, ctx, tag, step, buildargs)
    return tag


def kafka_image(client: docker.DockerClient, arts: artifacts.Artifacts) -> str:
    base = base_image(client)
    jars = sorted(p.name for p in arts.kafka_libs.glob("*.jar"))
    files = [(HERE / "kafka" / n).read_bytes() for n in ("Dockerfile", "run")]
    tag = f"eos-chaos/kafka:{arts.kafka_version}-{_digest(base, *jars, *files)}"
    context = {n: HERE / "kafka" / n for n in ("Dockerfile", "run")} | {"libs": arts.kafka_libs}
    return _ensure_built(client, tag, "kafka image", context, {"BASE": base})


def toxiproxy_image(client: docker.DockerClient) -> str:
    with cache_lock():  # the CLI (the image's healthcheck) only here: a local cluster runs none
        server, cli, kwire = (toxiproxy_build.toxiproxy_bin(), toxiproxy_build.build_toxiproxy_cli(),
                              kwire_build.build_kwire())
    dockerfile = (HERE / "toxiproxy" / "Dockerfile").read_bytes()
    digest = _digest(dockerfile, server.read_bytes(), cli.read_bytes(), kwire.read_bytes())
    tag = f"eos-chaos/toxiproxy:{pins.TOXIPROXY_VERSION.lstrip('v')}-{digest}"
    context = {"Dockerfile": HERE / "toxiproxy" / "Dockerfile", "toxiproxy-server": server, "toxiproxy-cli": cli,
               "kwire": kwire}
    return _ensure_built(client, tag, "toxiproxy image", context)


def _pull_marker(ref: str) -> Path:
    return cache_dir() / "images" / "pull-failed" / re.sub(r"[^A-Za-z0-9_.-]", "_", ref)


def _official(client: docker.DockerClient, ref: str, pull: bool) -> bool:
    """Present locally, or pullable now (not asked again within a day of a failed pull unless ``pull``)."""
    if _exists(client, ref):
        return True
    marker = _pull_marker(ref)
    if not pull and marker.exists() and time.time() - marker.stat().st_mtime < PULL_RETRY_AFTER_S:
        log.info(f"not pulling {ref}: a pull failed {(time.time() - marker.stat().st_mtime) / 60:.0f} min ago "
            "(`eos-chaos images --pull` tries again)")
        return False
    try:
        proc = subprocess.run(["docker", "pull", "-q", ref], capture_output=True, text=True, timeout=PULL_TIMEOUT_S)
        ok, why = proc.returncode == 0, (proc.stderr.strip().splitlines() or ["failed"])[-1]
    except subprocess.TimeoutExpired:
        ok, why = False, f"did not finish in {PULL_TIMEOUT_S}s"
    if ok:
        marker.unlink(missing_ok=True)
    else:
        log.info(f"cannot pull {ref}: {why}")
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(why + "\n")
    return ok


def ensure_images(arts: artifacts.Artifacts, prefer_local: bool = False, pull: bool = False) -> Images:
    """The official Kafka image when present or pullable, else a local stand-in (built if needed);
    Toxiproxy always from the pinned binaries."""
    client = _client()
    try:
        kafka_ref = f"{pins.OFFICIAL_KAFKA_IMAGE}:{arts.kafka_version}"
        tox = toxiproxy_image(client)
        if not prefer_local and _official(client, kafka_ref, pull):
            log.info(f"using the official image {kafka_ref} and {tox}")
            return Images(kafka_ref, tox, "official kafka")
        images = Images(kafka_image(client, arts), tox, "local")
        log.info(f"using local images {images.kafka} and {images.toxiproxy} (official kafka image absent and not pullable)")
        return images
    finally:
        client.close()
