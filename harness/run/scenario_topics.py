"""A scenario's ``topics:`` entries: a name (the run names the topic ``NAME.<tag>``), or a mapping
``{name, keep_name, partitions, config}`` for a topic the app under test names in its own code
(``keep_name: true``: the run uses the name as written), or one that needs its own partitions or
topic config (a compacted table). ``Scenario.topics`` stays the list of names (a ``TopicList``),
with each entry's ``TopicSpec`` beside it, so what reads names keeps reading names."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, field_validator
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

#: A topic has at most this many partitions (as the scenario's own ``partitions``): the history's
#: positions pack a partition in a few bits, and a run's readers poll every partition.
MAX_PARTITIONS = 64


class TopicSpec(BaseModel):
    """One topic of a scenario: its name, whether the run keeps it as written (no ``.<tag>``), its
    partitions (None: the scenario's) and its topic config (passed to CreateTopics as given)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    #: the run uses the name as written: an app that names its topics in its code finds them
    keep_name: bool = False
    #: None: the scenario's ``partitions``
    partitions: int | None = Field(default=None, ge=1, le=MAX_PARTITIONS)
    #: topic config (``cleanup.policy: compact``); Kafka refuses what it does not know, when the run creates it
    config: dict[str, str] = {}

    @field_validator("config", mode="before")
    @classmethod
    def _config_as_text(cls, config: Any) -> Any:
        """Kafka's topic config values are text: YAML's numbers and booleans are written as Kafka reads them."""
        if not isinstance(config, dict):
            return config
        out: dict[Any, Any] = {}
        for key, value in config.items():
            if isinstance(value, bool):
                out[key] = "true" if value else "false"
            elif isinstance(value, (int, float, str)):
                out[key] = str(value)
            else:
                raise PydanticCustomError("scenario", "{message}", {
                    "message": f"{key}: {value!r} is not a topic config value; a value is text, a number or true/false"})
        return out

    @property
    def plain(self) -> bool:
        """Given as a bare name: nothing of its own."""
        return not self.keep_name and self.partitions is None and not self.config


class TopicList(list[str]):
    """A scenario's topic names, in order, each with its ``TopicSpec`` (``specs``). Validated from
    the file's entries (a name or a mapping) and written back the same way."""

    specs: dict[str, TopicSpec]

    def __init__(self, entries: Iterable[str | TopicSpec] = ()) -> None:
        specs = [e if isinstance(e, TopicSpec) else TopicSpec(name=e) for e in entries]
        super().__init__(t.name for t in specs)
        self.specs = {t.name: t for t in specs}

    def spec(self, name: str) -> TopicSpec:
        """``name``'s entry (a bare name's, for a name the list does not hold)."""
        return self.specs.get(name) or TopicSpec(name=name)

    def entries(self) -> list[str | dict[str, Any]]:
        """As a scenario file holds them: a bare name as the name, the others as their mapping."""
        return [name if self.spec(name).plain else self.spec(name).model_dump(exclude_defaults=True) for name in self]

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        entries = handler.generate_schema(list[TopicSpec])
        return core_schema.no_info_before_validator_function(
            _as_mappings, core_schema.no_info_after_validator_function(cls, entries),
            serialization=core_schema.plain_serializer_function_ser_schema(lambda v: TopicList(v).entries()
                                                                           if not isinstance(v, TopicList) else v.entries()))


def _as_mappings(value: Any) -> Any:
    """The file's entries as mappings: a bare name is ``{name: NAME}`` (anything else is left for
    pydantic to refuse, each entry on its own)."""
    if not isinstance(value, list):
        return value
    return [{"name": entry} if isinstance(entry, str) else entry for entry in value]


def entry_problem(entry: Any) -> str:
    """What an entry of ``topics:`` that is neither a name nor a mapping is, in the scenario's words."""
    return (f"{entry!r} is not a topic; a topic is a name, or a mapping "
            f"{{{', '.join(TopicSpec.model_fields)}}}")
