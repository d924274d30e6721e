"""The placeholders of an ``app`` workload's command, working folder and environment (docs/APPS.md):
what the harness tells a user's application, filled per instance, and each also in the instance's
environment, so an app can take them either way. ``{{`` and ``}}`` are literal braces."""

from __future__ import annotations

import string
import sys
from dataclasses import dataclass

from harness.base.errors import ConfigError

#: placeholder -> (the environment variable that carries it too, what it is)
PLACEHOLDERS: dict[str, tuple[str, str]] = {
    "bootstrap": ("EOS_CHAOS_APP_BOOTSTRAP", "the client listener's host:port,..."),
    "inputs": ("EOS_CHAOS_APP_INPUTS", "the run's names of the app's input topics, comma-separated"),
    "outputs": ("EOS_CHAOS_APP_OUTPUTS", "the run's names of the app's output topics, comma-separated"),
    "topic:NAME": ("EOS_CHAOS_APP_TOPICS", "the run's name of scenario topic NAME (the variable: NAME=run-name,...)"),
    "instance": ("EOS_CHAOS_APP_INSTANCE", "this instance, 0 to count - 1, the same after a restart"),
    "instances": ("EOS_CHAOS_APP_INSTANCES", "the number of instances (count)"),
    "id": ("EOS_CHAOS_APP_ID", "an id unique to the app in the run: application.id, group, transactional.id prefix"),
    "workdir": ("EOS_CHAOS_APP_WORKDIR", "a folder of this instance's own in the run folder, kept across restarts (state, logs)"),
    "python": ("EOS_CHAOS_APP_PYTHON", "the Python that runs the harness (its virtual environment's)"),
}
_TOPIC = "topic"


@dataclass(frozen=True)
class Place:
    """What one instance of an app is told."""

    bootstrap: str
    #: the scenario's topic names -> the run's (suffixed with the run id)
    topics: dict[str, str]
    #: the scenario's names of the app's input and output topics
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    instance: int
    instances: int
    id: str
    workdir: str = ""
    python: str = ""

    def values(self) -> dict[str, str]:
        """Each placeholder but ``topic:NAME`` -> its text."""
        return {"bootstrap": self.bootstrap, "inputs": ",".join(self.topics[t] for t in self.inputs),
                "outputs": ",".join(self.topics[t] for t in self.outputs), "instance": str(self.instance),
                "instances": str(self.instances), "id": self.id, "workdir": self.workdir,
                "python": self.python or sys.executable}


def problem(text: str, topics: list[str]) -> str | None:
    """What is wrong with the placeholders of ``text`` (a command argument, the working folder or an
    environment value) given the scenario's ``topics``, or None; the scenario names where."""
    try:
        fields = [(name, spec, conv) for _, name, spec, conv in string.Formatter().parse(text) if name is not None]
    except ValueError as exc:
        return f"{text!r}: {exc} (a literal brace is written twice: '{{{{' or '}}}}')"
    allowed = ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
    for name, spec, conv in fields:
        if conv:
            return f"{text!r}: {{{name}!{conv}}} takes no conversion; placeholders: {allowed}"
        if name == _TOPIC:
            if not spec:
                return f"{text!r}: {{topic}} names a topic: {{topic:NAME}}, NAME one of {', '.join(topics)}"
            if spec not in topics:
                return f"{text!r}: {{topic:{spec}}} names no topic of the scenario ({', '.join(topics)})"
        elif name not in PLACEHOLDERS or spec:
            return f"{text!r}: {{{name}{':' + spec if spec else ''}}} is not a placeholder; placeholders: {allowed}"
    return None


def expand(text: str, place: Place) -> str:
    """``text`` with its placeholders filled for ``place`` (``problem`` found none)."""
    wrong = problem(text, list(place.topics))
    if wrong is not None:
        raise ConfigError(wrong)
    values = place.values()
    out = []
    for literal, name, spec, _ in string.Formatter().parse(text):
        out.append(literal)
        if name is not None:
            out.append(place.topics[spec or ""] if name == _TOPIC else values[name])
    return "".join(out)


def environment(place: Place) -> dict[str, str]:
    """The variables every instance gets, one per placeholder."""
    values = place.values()
    env = {var: values[name] for name, (var, _) in PLACEHOLDERS.items() if name in values}
    env[PLACEHOLDERS["topic:NAME"][0]] = ",".join(f"{name}={run}" for name, run in place.topics.items())
    return env
