"""JSON lines: one from plain data, whatever text it holds, and one read back as an object
(a file of them is read by `record.lines`).

A model may write a lone surrogate (`"\\udcff"` is valid JSON and decodes to one); such text is
not UTF-8, so the fast serializer refuses it. The line is then written with every non-ASCII
character escaped, as JSON allows: it stays one whole line and reads back as the same text.

orjson writes the lines: every event and journal record is one, and it serialises a typical
event in about half the time `pydantic_core.to_json` takes (docs/benchmarks.md). What
orjson does not know (a pydantic model, a set, a path) goes through pydantic's own
conversion. A float that is not finite is written as `null` on every path: strict JSON, which
every reader takes (`jq` refuses `NaN`).

orjson's bytes keep the whole buffer it wrote into (4 KB for a 300-byte event). A line is
handed on as it is, and whoever keeps lines copies them out (`own_bytes`): the memory sink
keeps every line of a run, a file's writer joins what it holds every few dozen lines
(`record.lines`). Copying every line here cost about a tenth of recording an event.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson
from pydantic_core import to_jsonable_python

from swarmflow.core.reading import json_value

_NON_STR_KEYS = orjson.OPT_NON_STR_KEYS  # {1: ...} becomes {"1": ...}, as pydantic writes it


def _plain(value: object) -> object:
    """What orjson cannot serialise, as pydantic would serialise it; anything else as `str`."""
    return to_jsonable_python(value, fallback=str, inf_nan_mode="null")


def json_line(data: object) -> bytes:
    """Compact JSON bytes of `data`, anything unknown as its `str`."""
    try:
        # Without OPT_NON_STR_KEYS orjson is about twice as fast; a key that is not a string
        # (rare: no event field has one) makes it refuse, and the line is written with it.
        line = orjson.dumps(data, default=_plain)
    except orjson.JSONEncodeError:
        try:
            line = orjson.dumps(data, default=_plain, option=_NON_STR_KEYS)
        except orjson.JSONEncodeError:  # a lone surrogate, or an integer wider than 64 bits
            plain = _finite(to_jsonable_python(data, fallback=str))
            return json.dumps(plain, separators=(",", ":")).encode("ascii")
    return line  # orjson's buffer: see the module's docstring


def own_bytes(line: bytes) -> bytes:
    """`line` in a bytes object of its own size, to keep (see the module's docstring)."""
    return memoryview(line).tobytes()


def _finite(plain: object) -> object:
    """JSON-ready data with every float that is not finite made None (the rare path only)."""
    if isinstance(plain, float):
        return plain if math.isfinite(plain) else None
    if isinstance(plain, dict):
        return {key: _finite(value) for key, value in plain.items()}
    if isinstance(plain, list):
        return [_finite(value) for value in plain]
    return plain


def json_object(raw: bytes) -> dict[str, Any]:
    """The JSON object of one line, parsed by the one reader (`ValueError` when it is not
    JSON or nests too deep, `TypeError` when it is JSON but not an object)."""
    item = json_value(raw)
    if not isinstance(item, dict):
        raise TypeError("not a JSON object")
    return item
