"""`run.json`: how a run was started (the flow, its inputs, the repository and the model), so
that `swarmflow resume` can start it again; written once, whole, and read back through the one
reader (`core.reading`)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from swarmflow.core import reading
from swarmflow.core.errors import ConfigError
from swarmflow.runtime.flow import Flow

MANIFEST = "run.json"
MANIFEST_VERSION = 1
MANIFEST_CAP = 1 << 24
"""The largest `run.json` read back: 16 MiB."""


def flow_reference(flow: Flow[..., object]) -> str:
    """How to load `flow` again: a `.swarm` file, `module:name`, or `file.py:name`."""
    source = getattr(flow, "source_path", None)
    if source:
        return str(Path(source).resolve())
    fn = flow.fn
    module = getattr(fn, "__module__", "") or ""
    name = getattr(fn, "__qualname__", flow.name)
    # A module run from its file (`swarmflow run flows.py:fix`) is not importable by its name.
    scope = getattr(fn, "__globals__", None)
    by_name = scope is None or getattr(sys.modules.get(module), "__dict__", None) is scope
    if module == "__main__" or "<" in name or not by_name:
        import inspect

        try:
            file = inspect.getsourcefile(fn)
        except TypeError:
            file = None
        return f"{Path(file).resolve()}:{flow.name}" if file else ""
    return f"{module}:{flow.name}"


def write_manifest(
    run_dir: Path, flow: Flow[..., object], inputs: dict[str, Any], *, repo: Any, model: Any
) -> None:
    """Record how the run was started (once: a resumed run keeps its first manifest)."""
    path = run_dir / MANIFEST
    if path.exists():
        return
    portable = all(isinstance(v, str | int | float | bool | type(None)) for v in inputs.values())
    data = {
        "version": MANIFEST_VERSION,
        "flow": flow_reference(flow),
        "flow_name": flow.name,
        "inputs": inputs if portable else None,
        "created": time.time(),
        "repo": str(Path(repo).resolve()) if repo else None,
        "model": model if isinstance(model, str) else None,
    }
    write_whole(path, json.dumps(data, indent=2, default=str) + "\n")


def write_whole(path: Path, text: str) -> None:
    """Write `path` so that a reader, or a run killed mid-write, sees all of it or none of it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


_MANIFEST_FIELDS: dict[str, tuple[type, ...]] = {
    "flow": (str,),
    "flow_name": (str,),
    "inputs": (dict, type(None)),
    "repo": (str, type(None)),
    "model": (str, type(None)),
}
"""The manifest's fields that a resume uses, and the JSON types each may have."""


def read_manifest(run_dir: Path) -> dict[str, Any]:
    """`run.json`, its fields of the types a resume expects (`ConfigError` naming the file
    and the field otherwise)."""
    path = run_dir / MANIFEST
    if not path.exists():
        return {}
    try:
        data = reading.json_value(reading.read_bytes(path, "a run manifest", MANIFEST_CAP))
    except reading.Unreadable as exc:
        raise ConfigError(f"{path}: not a run manifest ({exc.message})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not a run manifest ({reading.one_line(exc)})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a run manifest (not a JSON object)")
    for name, types in _MANIFEST_FIELDS.items():
        if name in data and not isinstance(data[name], types):
            raise ConfigError(
                f"{path}: not a run manifest ({name} is a {type(data[name]).__name__})"
            )
    if "\x00" in (data.get("repo") or ""):
        raise ConfigError(f"{path}: not a run manifest (repo holds a NUL character)")
    return data
