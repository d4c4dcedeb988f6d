"""JSON lines: one from plain data, whatever text it holds; a file of them read back, each
line's mistake located.

A model may write a lone surrogate (`"\\udcff"` is valid JSON and decodes to one); such text is
not UTF-8, so the fast serializer refuses it. The line is then written with every non-ASCII
character escaped, as JSON allows: it stays one whole line and reads back as the same text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic_core import PydanticSerializationError, to_json, to_jsonable_python

from swarmflow.core.errors import ConfigError


def json_line(data: Any) -> bytes:
    """Compact JSON bytes of `data`, anything unknown as its `str`."""
    try:
        return to_json(data, fallback=str)
    except PydanticSerializationError:
        plain = to_jsonable_python(data, fallback=str)
        return json.dumps(plain, separators=(",", ":")).encode("ascii")


def take_json_objects(path: Path, what: str, take: Callable[[int, dict[str, Any]], None]) -> None:
    """Hand each JSON object of `path` to `take` with its line number; a line that is not
    `what` (no JSON object, or one `take` finds a field of missing or wrong) is a
    `ConfigError` naming the file and the line."""
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                item = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{number}: not {what}: {exc}") from None
            if not isinstance(item, dict):
                raise ConfigError(f"{path}:{number}: not {what}: not a JSON object")
            try:
                take(number, item)
            except (KeyError, TypeError, ValueError) as exc:  # JSON, but not the `what` it says
                detail = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
                raise ConfigError(f"{path}:{number}: not {what}: {detail}") from None
