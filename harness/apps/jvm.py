"""What the JVM apps' launchers share: check the flags (argparse: a usage message and exit 2), build
what is missing into the cache, then ``os.execv`` the ``java`` so the JVM is the launcher's own
process (the harness's SIGKILL, SIGSTOP and SIGTERM reach it directly, and its pid is the one the
harness started)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from harness.base.errors import ConfigError, HarnessError

#: The JVM's heap: an app instance of the harness handles a few hundred records a second; several
#: instances share a 2-core machine with the brokers. ``JAVA_OPTS`` comes after, so it overrides.
JVM_FLAGS = ("-Xmx512m",)
#: The variable whose options (shell words) are added to the JVM's: ``env: {JAVA_OPTS: ...}``.
JAVA_OPTS = "JAVA_OPTS"


def parser(module: str, description: str) -> argparse.ArgumentParser:
    """The launcher's parser; abbreviations are refused (the program's own parser may differ)."""
    return argparse.ArgumentParser(prog=f"python -m {module}", description=description, allow_abbrev=False)


def jvm_options() -> list[str]:
    """``JVM_FLAGS`` and then ``JAVA_OPTS``'s words."""
    try:
        extra = shlex.split(os.environ.get(JAVA_OPTS, ""))
    except ValueError as exc:
        raise ConfigError(f"{JAVA_OPTS}={os.environ[JAVA_OPTS]!r} is not a list of shell words: {exc}") from None
    return [*JVM_FLAGS, *extra]


def launch(prog: str, prepare: Callable[[], tuple[Path, list[str]]]) -> NoReturn:
    """Become the JVM ``prepare()`` gives (the ``java`` and its arguments after the JVM options),
    with its build made first: a harness error is a line on stderr and its exit code (2), never a
    traceback."""
    try:
        java, args = prepare()
        command = [str(java), *jvm_options(), *args]
    except HarnessError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr, flush=True)
        sys.exit(exc.exit_code)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(command[0], command)
