"""A pydantic error in an inventory file as one line a user can act on:
``FILE:LINE: nodes[1].listeners.client: what is wrong (allowed: ...)``."""

from __future__ import annotations

import difflib
import types
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel

from harness.base.yaml_strict import line_of


def problem_line(path: Path, root: yaml.Node | None, data: Any, e: Any, model: type[BaseModel]) -> str:
    """One pydantic error (``e``, from validating ``data`` as ``model``) as ``file:line: where: what``."""
    loc = tuple(x for x in e["loc"] if x != "[key]") + tuple((e.get("ctx") or {}).get("where", ()))
    located = _located(loc, data)
    words = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in loc).lstrip(".")
    return f"{path}:{line_of(root, located)}: {words + ': ' if words else ''}{_message(e, loc, model)}"


def _located(loc: tuple[Any, ...], data: Any) -> tuple[Any, ...]:
    """The part of ``loc`` that exists in the file's data (a missing key is not on any line)."""
    out: list[Any] = []
    for key in loc:
        if isinstance(data, dict) and key in data:
            data = data[key]
        elif isinstance(data, list) and isinstance(key, int) and key < len(data):
            data = data[key]
        else:
            break
        out.append(key)
    return tuple(out)


def _message(e: Any, loc: tuple[Any, ...], model: type[BaseModel]) -> str:
    kind = e["type"]
    if kind == "extra_forbidden":
        allowed = _fields_at(loc[:-1], model)
        return f"unknown key (allowed: {', '.join(allowed)}){_did_you_mean(loc[-1], allowed)}"
    if kind == "missing":
        return "missing (required)"
    if kind == "literal_error":
        allowed = [x.strip(" '") for x in str(e["ctx"]["expected"]).replace(" or ", ", ").split(",")]
        return f"{e.get('input')!r}; allowed: {', '.join(allowed)}{_did_you_mean(e.get('input'), allowed)}"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"should be a mapping (key: value), not {type(e.get('input')).__name__}"
    return str(e["msg"]).removeprefix("Value error, ").replace("Input should be", "should be")


def _did_you_mean(value: Any, allowed: list[str]) -> str:
    close = difflib.get_close_matches(str(value), allowed, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _fields_at(loc: tuple[Any, ...], model: type[BaseModel]) -> list[str]:
    """The keys the model allows at ``loc`` (``("nodes", 0, "control", "ssh")`` -> SshControl's)."""
    ann: Any = model
    for key in loc:
        ann = _inner(ann)
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            field = ann.model_fields.get(str(key))
            if field is None:
                return []
            ann = field.annotation
        elif get_origin(ann) in (list, tuple):
            ann = get_args(ann)[0]
        elif get_origin(ann) is dict:
            ann = get_args(ann)[1]
        else:
            return []
    ann = _inner(ann)
    return list(ann.model_fields) if isinstance(ann, type) and issubclass(ann, BaseModel) else []


def _inner(ann: Any) -> Any:
    """``ann`` without ``Annotated[...]`` and ``| None``."""
    while True:
        if get_origin(ann) is Annotated:
            ann = get_args(ann)[0]
        elif get_origin(ann) in (Union, types.UnionType):
            rest = [a for a in get_args(ann) if a is not type(None)]
            if len(rest) != 1:
                return ann
            ann = rest[0]
        else:
            return ann
