"""YAML files the harness reads (scenarios, cluster inventories), loaded strictly: a key given twice,
an alias bomb, values nested too deep, a file that is not UTF-8 or not a regular file are refused
with ``file:line``; ``line_of`` finds the line of any value, so a model's errors can name it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harness.base.errors import ConfigError

#: A YAML file the harness reads is this long at most: a history or a log given by mistake is
#: refused before it is read into memory and parsed.
MAX_FILE_BYTES = 1 << 20
#: A YAML file nests this deep at most (the scenario library's nest 6 deep). PyYAML composes nested
#: values recursively: 20,000 levels would end in a RecursionError.
MAX_YAML_DEPTH = 50
#: YAML aliases repeat this many values at most in all: enough to reuse settings, and an alias bomb
#: (each alias repeating the one before several times) is refused before it expands to billions.
MAX_ALIASED_VALUES = 10_000


class Refused(yaml.YAMLError):
    """A YAML file refused while it is read: the message, and the 1-based line it is about."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


class StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing what would make a file other than it reads, or never load: a
    key twice in one mapping (PyYAML keeps the last silently), values nested deeper than
    ``MAX_YAML_DEPTH``, aliases that repeat more than ``MAX_ALIASED_VALUES`` values in all (a
    billion-laughs bomb) or that refer to a value holding them. ``what``: the file's kind, as
    messages name it ("a scenario")."""

    def __init__(self, stream: str, what: str = "a scenario") -> None:
        super().__init__(stream)
        self._what = what
        self._open: list[str | None] = []  # the anchors of the values being composed, outermost first
        self._sizes: dict[int, int] = {}  # id(node) -> how many values it holds, aliases expanded
        self._aliased = 0  # values repeated by aliases so far

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self._open:
                raise Refused(line, f"alias *{event.anchor} is inside the value it names (a recursive structure); "
                                    f"{self._what} is a tree")
            node = super().compose_node(parent, index)
            self._aliased += values_in(node, self._sizes) if node is not None else 0
            if self._aliased > MAX_ALIASED_VALUES:
                raise Refused(line, f"alias *{event.anchor}: aliases repeat more than {MAX_ALIASED_VALUES:,} values in "
                                    "all (an alias bomb?); write the values out, or repeat fewer")
            return node
        if len(self._open) >= MAX_YAML_DEPTH:
            raise Refused(line, f"values nested more than {MAX_YAML_DEPTH} deep; {self._what} nests a few levels")
        self._open.append(event.anchor)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._open.pop()
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *defaults`: merged keys may be overridden, as YAML says
            key, line = self.construct_object(key_node, deep=True), key_node.start_mark.line + 1
            try:
                if key in first:
                    raise Refused(line, f"duplicate key {key!r} (first on line {first[key]}); a key is given once in "
                                        "a mapping (YAML would keep the last one silently)")
                first[key] = line
            except TypeError:
                continue  # an unhashable key: PyYAML says so itself
        return super().construct_mapping(node, deep)


def values_in(root: yaml.Node, sizes: dict[int, int]) -> int:
    """How many values ``root`` holds, itself and aliases included: iteratively, each node counted
    once (``sizes`` remembers), so a bomb's size is known without expanding it."""
    todo = [root]
    while todo:
        node = todo[-1]
        if id(node) in sizes:
            todo.pop()
            continue
        children: list[yaml.Node] = ([x for pair in node.value for x in pair] if isinstance(node, yaml.MappingNode)
                                     else list(node.value) if isinstance(node, yaml.SequenceNode) else [])
        pending = [c for c in children if id(c) not in sizes]
        if pending:
            todo += pending
            continue
        sizes[id(node)] = 1 + sum(sizes[id(c)] for c in children)
        todo.pop()
    return sizes[id(root)]


def parse_yaml(text: str, what: str = "a scenario") -> tuple[yaml.Node | None, Any]:
    """The YAML document ``text`` as its node tree (for lines) and its data; ``Refused`` or another
    ``yaml.YAMLError`` if it is not YAML the harness reads."""
    loader = StrictLoader(text, what)
    try:
        root = loader.get_single_node()
        return root, (loader.construct_document(root) if root is not None else None)
    finally:
        loader.dispose()


def read_yaml(path: Path, kind: str) -> tuple[yaml.Node | None, Any]:
    """The YAML file at ``path`` as its node tree and its data; ConfigError naming the file (and the
    line where there is one) if it is missing, not a regular file, too large, not UTF-8 or not
    strict YAML. ``kind``: what the file is ("scenario", "inventory"), as the messages name it."""
    a_kind = f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"
    try:
        if not path.exists():
            raise ConfigError(f"{kind} file {path} does not exist")
        if path.is_dir():
            raise ConfigError(f"{kind} file {path} is a folder, not a YAML file")
        if not path.is_file():  # a pipe would block the read for ever, a device give anything
            raise ConfigError(f"{kind} file {path} is not a regular file, not a YAML file")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ConfigError(f"{kind} file {path} is {path.stat().st_size:,} bytes; {a_kind} file is at most "
                              f"{MAX_FILE_BYTES:,}: is it the file you meant?")
        raw = path.read_bytes()
    except OSError as exc:  # permission denied, a name too long, an I/O error
        raise ConfigError(f"{kind} file {path} cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")  # whatever the locale says: the harness's YAML files are UTF-8
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}: not valid YAML: line {line} is not UTF-8 text (byte {raw[exc.start]:#04x}); "
                          f"{a_kind} file is UTF-8") from None
    try:
        return parse_yaml(text, a_kind)
    except Refused as exc:
        raise ConfigError(f"{path}:{exc.line}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc


def line_of(root: yaml.Node | None, loc: tuple[Any, ...]) -> int:
    """The 1-based line of the YAML node at ``loc`` (or of its nearest parent that exists)."""
    node, line = root, 1
    for key in loc:
        if node is None:
            break
        line = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            match = [(k, v) for k, v in node.value if k.value == str(key)]
            if not match:
                break
            # the last: a key given after a merge (`<<: *defaults`) overrides the merged one before it
            line = match[-1][0].start_mark.line + 1
            node = match[-1][1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return line
