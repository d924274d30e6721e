"""How an app's input key or value is written down in the history (``recorded``), read back
(``decoded``) and sent (``wire``), and the id a pipeline's later stage knows an input by
(``content_id``): one place, so that the feeder and every reader of its records agree on it. No
pandas here: the feeder and the child processes that apply a user's function import it, and each
such process would pay a second of CPU for pandas it never uses (``app_inputs`` builds the frames)."""

from __future__ import annotations

import base64
import json
from typing import Any

from harness.history.model import BYTES, JSON


def recorded(fmt: str, value: Any) -> str | None:
    """A key or value of format ``fmt`` as the history writes it down: text as is, JSON as its
    (compact) JSON text, bytes as base64; None stays None."""
    if value is None:
        return None
    if fmt == BYTES:
        return base64.b64encode(bytes(value)).decode("ascii")
    if fmt == JSON:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def decoded(fmt: str, text: str | None) -> Any:
    """What ``recorded`` wrote down, back as the feeder had it (str, a JSON value, bytes)."""
    if text is None:
        return None
    if fmt == BYTES:
        return base64.b64decode(text)
    if fmt == JSON:
        return json.loads(text)
    return text


def wire(fmt: str, value: Any) -> bytes | None:
    """The bytes a key or value of format ``fmt`` is sent as (None: a null)."""
    if value is None:
        return None
    if fmt == BYTES:
        return bytes(value)
    text = recorded(fmt, value)
    assert text is not None
    return text.encode("utf-8")


def content_id(topic: str, key: str | None, value: str | None) -> str:
    """The id a pipeline's later stage knows an input record by (docs/APPS.md, "Pipelines"): its
    content, ``["topic","key","value"]`` as compact JSON (topic as the run names it). Its upstream
    app's outputs repeat whenever that app wrote one twice, so their positions would not tell the
    expected records (which have none) from the found ones: the runner records the stage's function
    per content, and the checker looks it up the same way."""
    return json.dumps([topic, key, value], separators=(",", ":"), ensure_ascii=False)
