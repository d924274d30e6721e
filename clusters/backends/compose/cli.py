"""The Compose v2 CLI: ``docker compose`` if present, else one we build from the Go module proxy."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import tempfile
from pathlib import Path

from clusters.builds import pins
from clusters.builds.golang import go_env
from harness.base.errors import EnvironmentProblem
from harness.base.paths import cache_dir

log = logging.getLogger(__name__)

#: Compose is a large Go program: ~2 min to compile on two cores, plus module downloads.
BUILD_TIMEOUT_S = 1200


def built_compose() -> Path:
    return cache_dir() / "compose" / pins.COMPOSE_VERSION / "docker-compose"


def _plugin_works() -> bool:
    try:
        proc = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and "v2" in proc.stdout


def find_compose() -> list[str]:
    """The command that runs Compose v2 (``["docker", "compose"]`` or the built binary)."""
    if shutil.which("docker") and _plugin_works():
        return ["docker", "compose"]
    target = built_compose()
    if target.is_file():
        return [str(target)]
    return [str(build_compose())]


def build_compose() -> Path:
    go = shutil.which("go")
    if not go:
        raise EnvironmentProblem(
            "`docker compose` (v2) is not installed and Go is missing, so eos-chaos cannot build it. "
            "Install the Compose v2 plugin, or Go 1.24+."
        )
    target = built_compose()
    target.parent.mkdir(parents=True, exist_ok=True)
    env = go_env()
    log.info(f"building Docker Compose {pins.COMPOSE_VERSION} from the Go module proxy (once; a few minutes)")
    mod = f"{pins.COMPOSE_MODULE}@{pins.COMPOSE_VERSION}"
    dl = subprocess.run(["go", "mod", "download", "-json", mod], capture_output=True, text=True, env=env, timeout=BUILD_TIMEOUT_S)
    if dl.returncode != 0:
        raise EnvironmentProblem(f"`go mod download {mod}` failed:\n{(dl.stdout + dl.stderr)[-1500:]}")
    src = json.loads(dl.stdout)["Dir"]
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / "docker-compose"
        # Built inside its own module so its go.mod (with exclude directives) is the main module.
        ldflags = f"-s -w -X {pins.COMPOSE_MODULE}/internal.Version={pins.COMPOSE_VERSION}"
        build = subprocess.run(["go", "build", "-trimpath", "-ldflags", ldflags, "-o", str(out), "./cmd"],
                               cwd=src, capture_output=True, text=True, env=env, timeout=BUILD_TIMEOUT_S)
        if build.returncode != 0:
            raise EnvironmentProblem(f"building Docker Compose failed:\n{(build.stdout + build.stderr)[-1500:]}")
        out.rename(target)
    log.info(f"built {target}")
    return target
