"""``python -m harness.workloads.app_function [--mode MODE] [--outputs T,...] MODULE:FUNCTION``: an app
contract's function applied to input records, in a process of its own (the runner's
``app_run.apply_function``), so the user's code never runs in the runner nor in the checker.

The input record is a dict ``{"topic", "partition", "offset", "key", "value", "timestamp",
"headers"}`` (docs/APPS.md). Per mode, what it reads on stdin and writes on stdout:

- ``map``: one record per line -> one JSON list of output records ``{"topic", "key", "value"}`` per line;
- ``by``: one record per line -> one list of contributions ``[topic, key, amount]`` per line (the
  function may give ``[topic, key, amount]`` lists or ``{"topic", "key", "amount"}`` dicts);
- ``join``: one ``[stream record, table record or null]`` per line -> one list of output records per line;
- ``model``: one line ``{topic: [record, ...]}`` (every committed input) -> one line, the expected final
  table ``[[topic, key, value], ...]`` (the function may give that list or a dict ``{(topic, key): value}``);
- ``window-key``: one ``[output key as recorded, serde]`` per line -> one ``[key, window start ms]`` per
  line: a windowed contract's ``window_key`` function, given the key as the app wrote it (``bytes``
  for the bytes serde, an ``int`` for long and int, else ``str``).

A function that cannot be imported, raises, returns anything else, or (``--outputs``) names a topic that
is not one of the app's outputs ends it with exit 2 and one line on stderr naming the function's input.
"""

from __future__ import annotations

import argparse
import base64
import importlib
import sys
from collections.abc import Callable
from typing import Any

import orjson

from harness.history.app_values import decoded

FIELDS = ("topic", "key", "value")
MODES = ("map", "by", "join", "model", "window-key")


class FunctionError(Exception):
    """The user's function did something its contract does not allow: the message says what."""


def load(spec: str) -> Callable[..., Any]:
    """The function ``module:function``; SystemExit(2) saying what is wrong."""
    module, _, name = spec.partition(":")
    try:
        fn = getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise SystemExit(_say(f"cannot import module {module!r} ({exc}); the app's cwd is on the import path")) from None
    except AttributeError:
        raise SystemExit(_say(f"module {module!r} has no {name!r}")) from None
    if not callable(fn):
        raise SystemExit(_say(f"{spec} is a {type(fn).__name__}, not a function"))
    return fn  # type: ignore[no-any-return]


def _call(fn: Callable[..., Any], *args: Any, shown: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - the user's function: its failure is reported, never a traceback
        raise FunctionError(f"raised {type(exc).__name__}: {exc} for input {_short(shown)}") from None


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 300 else text[:297] + "..."


def _topic(topic: Any, outputs: frozenset[str] | None, shown: Any) -> None:
    if outputs is not None and topic not in outputs:
        raise FunctionError(f"returned a record for topic {topic!r}, not one of the app's outputs ({', '.join(sorted(outputs))}), "
                            f"for input {_short(shown)}")


def outputs(fn: Callable[..., Any], record: Any, allowed: frozenset[str] | None = None,
            args: tuple[Any, ...] | None = None) -> list[dict[str, Any]]:
    """``fn(record)`` (or ``fn(*args)``) checked: a list of ``{"topic", "key", "value"}`` with text
    or null key and value, on the app's output topics (``allowed``, None: any)."""
    out = _call(fn, *(args if args is not None else (dict(record),)), shown=record)
    if not isinstance(out, list):
        raise FunctionError(f"returned a {type(out).__name__} for input {_short(record)}; it returns a list of "
                            '{"topic", "key", "value"} dicts (an empty list: no output)')
    for o in out:
        if (not isinstance(o, dict) or set(o) - set(FIELDS) or not isinstance(o.get("topic"), str)
                or any(o.get(k) is not None and not isinstance(o.get(k), str) for k in ("key", "value"))):
            raise FunctionError(f"returned {o!r} for input {_short(record)}; each output is "
                                '{"topic": str, "key": str or None, "value": str or None}')
        _topic(o["topic"], allowed, record)
    return [{k: o.get(k) for k in FIELDS} for o in out]


def contributions(fn: Callable[..., Any], record: dict[str, Any], allowed: frozenset[str] | None = None) -> list[list[Any]]:
    """``fn(record)`` checked: a list of ``[topic, key, amount]`` (or such dicts), amount an integer."""
    out = _call(fn, dict(record), shown=record)
    if not isinstance(out, list):
        raise FunctionError(f"returned a {type(out).__name__} for input {_short(record)}; a by-function returns a list "
                            "of [topic, key, amount] (an empty list: it contributes nothing)")
    got = []
    for c in out:
        t = (c.get("topic"), c.get("key"), c.get("amount", 1)) if isinstance(c, dict) else tuple(c) if isinstance(c, list | tuple) else ()
        if (len(t) != 3 or not isinstance(t[0], str) or not (t[1] is None or isinstance(t[1], str))
                or not isinstance(t[2], int) or isinstance(t[2], bool)):
            raise FunctionError(f"returned {c!r} for input {_short(record)}; each contribution is [topic: str, "
                                "key: str or None, amount: int] or such a dict")
        _topic(t[0], allowed, record)
        got.append(list(t))
    return got


def table(fn: Callable[..., Any], inputs: dict[str, list[dict[str, Any]]], allowed: frozenset[str] | None = None) -> list[list[Any]]:
    """``fn(inputs)`` checked: the final table as ``[[topic, key, value], ...]`` (value text or null;
    an integer is written as its decimal text), one row per (topic, key)."""
    shown = f"{sum(len(v) for v in inputs.values())} committed inputs of {', '.join(sorted(inputs)) or 'no topic'}"
    out = _call(fn, {t: [dict(r) for r in rs] for t, rs in inputs.items()}, shown=shown)
    rows = [[t, k, v] for (t, k), v in out.items()] if isinstance(out, dict) else out
    if not isinstance(rows, list):
        raise FunctionError(f"returned a {type(out).__name__} for {shown}; a model returns [[topic, key, value], ...] "
                            "or {(topic, key): value}")
    seen: set[tuple[Any, Any]] = set()
    got = []
    for r in rows:
        r = list(r) if isinstance(r, list | tuple) else []
        if (len(r) != 3 or not isinstance(r[0], str) or not (r[1] is None or isinstance(r[1], str))
                or not (r[2] is None or isinstance(r[2], str | int)) or isinstance(r[2], bool)):
            raise FunctionError(f"returned the row {_short(r)} for {shown}; each is [topic: str, key: str or None, "
                                "value: str, int or None]")
        _topic(r[0], allowed, shown)
        if (r[0], r[1]) in seen:
            raise FunctionError(f"returned two rows for topic {r[0]!r} key {r[1]!r} for {shown}; a table has one value per key")
        seen.add((r[0], r[1]))
        got.append([r[0], r[1], r[2] if not isinstance(r[2], int) else str(r[2])])
    return got


def window_of(fn: Callable[..., Any], recorded: str, serde: str) -> list[Any]:
    """``fn(key)`` checked, the key as the app wrote it (the history's text decoded by ``serde``):
    ``[key, window start ms]``, the key text (an integer is written as its decimal text)."""
    key: Any = base64.b64decode(recorded) if serde == "bytes" else int(recorded) if serde in ("long", "int") else recorded
    out = _call(fn, key, shown=key)
    pair = list(out) if isinstance(out, list | tuple) else []
    if (len(pair) != 2 or not isinstance(pair[0], str | int) or isinstance(pair[0], bool)
            or not isinstance(pair[1], int) or isinstance(pair[1], bool)):
        raise FunctionError(f"returned {_short(out)} for key {_short(key)}; a window_key function returns "
                            "[key: str, window start: int ms]")
    return [str(pair[0]), pair[1]]


#: a record's field (the runner's, never the user's) naming the feeder's format of a key and value
#: that are not text: they travel as the history writes them down (bytes as base64) and are decoded here
FORMAT_FIELD = "_format"


def as_read(item: Any) -> Any:
    """``item`` (a record, a join's pair, a model's inputs) with each record's key and value decoded
    by its ``FORMAT_FIELD`` (str, a JSON value, bytes), as the app read them."""
    if isinstance(item, list):
        return [as_read(x) for x in item]
    if isinstance(item, dict) and FORMAT_FIELD in item:
        fmt = item[FORMAT_FIELD]
        return {**{k: v for k, v in item.items() if k != FORMAT_FIELD},
                "key": decoded(fmt, item.get("key")), "value": decoded(fmt, item.get("value"))}
    if isinstance(item, dict) and all(isinstance(v, list) for v in item.values()):
        return {k: as_read(v) for k, v in item.items()}
    return item


def _say(message: str) -> int:
    print(message, file=sys.stderr)
    return 2


def _serve(mode: str, fn: Callable[..., Any], allowed: frozenset[str] | None) -> None:
    out = sys.stdout.buffer
    if mode == "model":
        out.write(orjson.dumps(table(fn, as_read(orjson.loads(sys.stdin.buffer.read() or b"{}")), allowed)) + b"\n")
        return
    for line in sys.stdin.buffer:
        item = as_read(orjson.loads(line))
        if mode == "window-key":
            result: Any = window_of(fn, *item)
        elif mode == "map":
            result = outputs(fn, item, allowed)
        elif mode == "by":
            result = contributions(fn, item, allowed)
        else:
            stream, tab = item
            result = outputs(fn, {"stream": stream, "table": tab}, allowed,
                             args=(dict(stream), None if tab is None else dict(tab)))
        out.write(orjson.dumps(result) + b"\n")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m harness.workloads.app_function")
    parser.add_argument("--mode", choices=MODES, default="map")
    parser.add_argument("--outputs", default=None, help="the app's output topics, comma-separated")
    parser.add_argument("function")
    args = parser.parse_args()
    fn = load(args.function)
    allowed = frozenset(args.outputs.split(",")) if args.outputs is not None else None
    try:
        _serve(args.mode, fn, allowed)
    except FunctionError as exc:
        raise SystemExit(_say(str(exc))) from None


if __name__ == "__main__":
    main()
