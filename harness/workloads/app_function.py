"""``python -m harness.workloads.app_function MODULE:FUNCTION``: an app contract's function applied
to input records, in a process of its own (the runner's ``app_run.apply_function``), so the user's
code never runs in the runner nor in the checker. Reads one JSON record per line on stdin
(``{"topic", "partition", "key", "value"}``), writes one JSON list of output records per line
(``{"topic", "key", "value"}``). A function that cannot be imported, raises, or returns anything else
ends it with exit 2 and one line on stderr naming the record."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

import orjson

FIELDS = ("topic", "key", "value")


def load(spec: str) -> Callable[[dict[str, Any]], Any]:
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


def outputs(fn: Callable[[dict[str, Any]], Any], record: dict[str, Any]) -> list[dict[str, Any]]:
    """``fn(record)`` checked: a list of ``{"topic", "key", "value"}`` with text or null key and value."""
    try:
        out = fn(dict(record))
    except Exception as exc:  # noqa: BLE001 - the user's function: its failure is reported, never a traceback
        raise SystemExit(_say(f"raised {type(exc).__name__}: {exc} for input {record}")) from None
    if not isinstance(out, list):
        raise SystemExit(_say(f"returned a {type(out).__name__} for input {record}; it returns a list of "
                              '{"topic", "key", "value"} dicts (an empty list: no output)'))
    for o in out:
        if (not isinstance(o, dict) or set(o) - set(FIELDS) or not isinstance(o.get("topic"), str)
                or any(o.get(k) is not None and not isinstance(o.get(k), str) for k in ("key", "value"))):
            raise SystemExit(_say(f"returned {o!r} for input {record}; each output is "
                                  '{"topic": str, "key": str or None, "value": str or None}'))
    return [{k: o.get(k) for k in FIELDS} for o in out]


def _say(message: str) -> int:
    print(message, file=sys.stderr)
    return 2


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(_say("usage: python -m harness.workloads.app_function MODULE:FUNCTION < records"))
    fn = load(sys.argv[1])
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        out.write(orjson.dumps(outputs(fn, orjson.loads(line))) + b"\n")


if __name__ == "__main__":
    main()
