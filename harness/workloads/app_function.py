"""``python -m harness.workloads.app_function MODULE:FUNCTION [--form FORM] [--outputs A,B]``: a
user's function applied to inputs, in a process of its own (the runner's ``app_run.apply_function``,
and the preflight's on sample inputs), so the user's code never runs in the runner nor in the
checker. Reads one JSON input per line on stdin, writes one JSON answer per line.

``FORMS`` says, per kind of function, how it is called on one input and what it must give back;
adding a kind of function is one entry. ``map`` (a map contract's ``function``): called with the
input record ``{"topic", "partition", "key", "value"}``, it returns a list of output records
``{"topic", "key", "value"}``, each topic one of ``--outputs`` (the app's, as the scenario names
them) when given. A function that cannot be imported, raises, or returns anything else ends it with
exit 2 and one line on stderr naming the input."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

FIELDS = ("topic", "key", "value")


@dataclass(frozen=True)
class Form:
    """One kind of user function: how it is called on an input, and its answer checked."""

    #: (the function, one input as read from stdin) -> what it returned
    call: Callable[[Callable[..., Any], Any], Any]
    #: (what it returned, the topics it may name: empty for any) -> the answer written back, or a
    #: ``Wrong`` saying what is wrong with it
    check: Callable[[Any, Sequence[str]], Any]


class Wrong(Exception):
    """What a function returned is not what its form asks for: ``what`` it returned, and ``hint``,
    what it should."""

    def __init__(self, what: str, hint: str = "") -> None:
        super().__init__(what)
        self.what, self.hint = what, hint


def _map_outputs(out: Any, outputs: Sequence[str]) -> list[dict[str, Any]]:
    """A map function's answer: a list of ``{"topic", "key", "value"}``, text or null key and value,
    each topic one of ``outputs`` (when given)."""
    shape = '{"topic": str, "key": str or None, "value": str or None}'
    if not isinstance(out, list):
        raise Wrong(f"returned a {type(out).__name__}", f"it returns a list of {shape} dicts (an empty list: no output)")
    for o in out:
        if (not isinstance(o, dict) or set(o) - set(FIELDS) or not isinstance(o.get("topic"), str)
                or any(o.get(k) is not None and not isinstance(o.get(k), str) for k in ("key", "value"))):
            raise Wrong(f"returned {o!r}", f"each output is {shape}")
        if outputs and o["topic"] not in outputs:
            raise Wrong(f"returned a record for topic {o['topic']!r}",
                        f"{o['topic']!r} is not one of the app's outputs, {', '.join(outputs)}: its records name one of those")
    return [{k: o.get(k) for k in FIELDS} for o in out]


#: form -> how a function of that kind is called and what it must give (docs/APPS.md's contract table)
FORMS: dict[str, Form] = {
    "map": Form(call=lambda fn, record: fn(dict(record)), check=_map_outputs),
}


def load(spec: str) -> Callable[..., Any]:
    """The function ``module:function``; SystemExit(2) saying what is wrong."""
    module, _, name = spec.partition(":")
    try:
        fn = getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise SystemExit(_say(f"cannot import module {module!r} ({exc}); the app's cwd is on the import path")) from None
    except AttributeError:
        raise SystemExit(_say(f"module {module!r} has no {name!r}")) from None
    except Exception as exc:  # noqa: BLE001 - the user's module failed as it loaded: reported, never a traceback
        raise SystemExit(_say(f"importing module {module!r} raised {type(exc).__name__}: {exc}")) from None
    if not callable(fn):
        raise SystemExit(_say(f"{spec} is a {type(fn).__name__}, not a function"))
    return fn  # type: ignore[no-any-return]


def answer(form: Form, fn: Callable[..., Any], given: Any, outputs: Sequence[str] = ()) -> Any:
    """``fn`` called on the input ``given`` as ``form`` says, its answer checked; SystemExit(2)
    naming the input when it raises or its answer is wrong."""
    try:
        out = form.call(fn, given)
    except Exception as exc:  # noqa: BLE001 - the user's function: its failure is reported, never a traceback
        raise SystemExit(_say(f"raised {type(exc).__name__}: {exc} for input {given}")) from None
    try:
        return form.check(out, outputs)
    except Wrong as exc:
        raise SystemExit(_say(f"{exc.what} for input {given}" + (f"; {exc.hint}" if exc.hint else ""))) from None


def _say(message: str) -> int:
    print(message, file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m harness.workloads.app_function", exit_on_error=False)
    p.add_argument("function")
    p.add_argument("--form", default="map", choices=sorted(FORMS))
    p.add_argument("--outputs", default="", help="the topics its answers may name, comma-separated (none: any)")
    try:
        args = p.parse_args(argv)
    except (argparse.ArgumentError, SystemExit):
        raise SystemExit(_say("usage: python -m harness.workloads.app_function MODULE:FUNCTION [--form "
                              f"{'|'.join(sorted(FORMS))}] [--outputs A,B] < inputs")) from None
    form, fn = FORMS[args.form], load(args.function)
    allowed = [t for t in args.outputs.split(",") if t]
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        out.write(orjson.dumps(answer(form, fn, orjson.loads(line), allowed)) + b"\n")


if __name__ == "__main__":
    main()
