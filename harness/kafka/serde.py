"""How an app's record keys and values are read back as the history's text (docs/APPS.md,
``output_serde``): UTF-8 text, 8- / 4-byte big-endian signed integers (Kafka's LongSerializer and
IntegerSerializer) as decimal text, or any bytes as base64 text (``bytes``: a windowed key, which
the checker decodes). Bytes that do not fit the serde are kept visible, never dropped:
``!bytes:<hex>``, which no contract explains (``app-map``) and no aggregate reads as a number."""

from __future__ import annotations

import base64
from typing import Literal

Serde = Literal["string", "long", "int", "bytes"]
_WIDTH = {"long": 8, "int": 4}
#: how bytes that do not fit their serde are written down
NOT_DECODED = "!bytes:"


def decode(serde: str, raw: bytes | None) -> str | None:
    """``raw`` (None: a null key or value) as the history's text under ``serde``."""
    if raw is None:
        return None
    if serde == "string":
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return NOT_DECODED + raw.hex()
    if serde == "bytes":
        return base64.b64encode(raw).decode("ascii")
    width = _WIDTH[serde]
    if len(raw) != width:
        return NOT_DECODED + raw.hex()
    return str(int.from_bytes(raw, "big", signed=True))


def encode(serde: str, text: str) -> bytes:
    """``text`` (a decimal integer for ``long`` / ``int``) as the bytes ``serde`` writes."""
    if serde == "string":
        return text.encode()
    if serde == "bytes":
        return base64.b64decode(text)
    return int(text).to_bytes(_WIDTH[serde], "big", signed=True)
