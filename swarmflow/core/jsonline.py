"""One JSON line from plain data, whatever text it holds.

A model may write a lone surrogate (`"\\udcff"` is valid JSON and decodes to one); such text is
not UTF-8, so the fast serializer refuses it. The line is then written with every non-ASCII
character escaped, as JSON allows: it stays one whole line and reads back as the same text.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import PydanticSerializationError, to_json, to_jsonable_python


def json_line(data: Any) -> bytes:
    """Compact JSON bytes of `data`, anything unknown as its `str`."""
    try:
        return to_json(data, fallback=str)
    except PydanticSerializationError:
        plain = to_jsonable_python(data, fallback=str)
        return json.dumps(plain, separators=(",", ":")).encode("ascii")
