"""One exception per failure domain; the CLI turns them into exit codes in one place."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the standard library only at run time: `make run`'s set-up runs before pip's install ends
    from pydantic import ValidationError


class HarnessError(Exception):
    """Base of every error the harness raises on purpose."""

    #: exit code the CLI uses: 2, usage or environment. 1 is kept for findings (an invalid verdict)
    #: and 3 for an unknown verdict, which no exception stands for.
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
    """Gave up waiting for a condition before its deadline; says what and the last state seen.
    The cluster or the machine did not get there in time: an environment problem (exit 2), never a
    finding about Kafka (exit 1)."""



def problems_in_brief(exc: ValidationError, under: tuple[str, ...] = ()) -> str:
    """A pydantic ``ValidationError`` in the words a file's refusal uses: how many problems, and the
    first one's field and message (``N problems, the first: a.b: why``); ``under``: where in the
    file the part that was checked sits (its fields are named from the file's top)."""
    errors = exc.errors()
    first = errors[0]
    return f"{len(errors)} problems, the first: {'.'.join(map(str, (*under, *first['loc'])))}: {first['msg']}"
