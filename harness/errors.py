"""One exception per failure domain; the CLI turns them into exit codes in one place."""

from __future__ import annotations


class HarnessError(Exception):
    """Base of every error the harness raises on purpose."""

    #: exit code the CLI uses; 2 = usage or environment, 1 = the thing tested failed
    exit_code = 2


class ConfigError(HarnessError):
    """Bad input: a flag, a file, a value. Names what was wrong and what is allowed."""


class EnvironmentProblem(HarnessError):
    """The machine lacks something (Java, Maven, Go, a free port, an artifact)."""


class ClusterError(HarnessError):
    """The cluster could not be started, stopped or controlled."""


class FaultError(HarnessError):
    """A fault could not be injected or healed (Toxiproxy, process control)."""


class WaitTimeout(HarnessError):
    """Gave up waiting for a condition before its deadline; says what and the last state seen."""

    exit_code = 1

