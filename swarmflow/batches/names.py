"""The names of a batch's run folders: each task's run is named after the task.

A task's wanted name (its `id` or `name` input in a plain batch; `<task id>-r<repeat>` in an
experiment) becomes a name that is safe on every file system: ASCII letters, digits, `.`, `-`
and `_`, a letter or digit first and last, no `..`, at most `LONGEST` characters, never one
of the device names Windows keeps (`con`, `nul`, `com1`, ...). Names are unique within the
batch regardless of case (a case-insensitive file system would merge `A` and `a`): a later
task whose name is taken gets the first free `-2`, `-3`, ... in task-list order. A task with
no name, or one with nothing safe left in it, keeps its place in the list: `task-000001` for
the first line. Every name is a valid run id (`record.runs_root.RUN_ID_PATTERN`).

Batch folders written before runs were named by task name every run by its place
(`task-000001`, ...). A folder whose `runs/` holds such a name that the new names do not make
is read in that layout, so a re-run of it resumes its runs and skips its finished tasks. (A
task that failed before its run folder was made, its inputs not fitting the flow, leaves no
trace there: in such a folder it runs again under its new name, and fails again at no cost.)
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

LONGEST = 64
"""The longest name made from a task's own (a suffix for uniqueness may follow it)."""
NAME_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,126}[A-Za-z0-9])?$"
"""What a run folder's name (a task id of `results.jsonl`) looks like."""
NAMING_INPUTS = ("id", "name")
"""The inputs, in order, that name a plain batch's task (a string or a whole number)."""
_POSITIONAL = re.compile(r"task-[0-9]{6,}")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_RESERVED = frozenset(
    ["con", "prn", "aux", "nul"] + [f"{port}{n}" for port in ("com", "lpt") for n in range(1, 10)]
)


def positional_name(index: int) -> str:
    """The name of the task at `index` (from 0) that has none of its own: `task-000001`."""
    return f"task-{index + 1:06d}"


def own_name(inputs: Mapping[str, Any]) -> str | None:
    """A plain batch task's own name: its first `NAMING_INPUTS` input that is text or a number."""
    for key in NAMING_INPUTS:
        value = inputs.get(key)
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            return str(value)
    return None


def slug(text: str) -> str:
    """`text` as a safe folder name, '' when nothing safe is left of it."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    cleaned = re.sub(r"\.{2,}", ".", _UNSAFE.sub("-", plain))
    cleaned = re.sub(r"-{2,}", "-", cleaned).strip("._-")
    return cleaned[:LONGEST].rstrip("._-")


def run_names(wanted: Sequence[str | None]) -> list[str]:
    """One safe, unique name per task, in task-list order (see the module's docstring)."""
    taken: set[str] = set()
    names: list[str] = []
    for index, name in enumerate(wanted):
        base = slug(name) if name is not None else ""
        chosen = _free(base or positional_name(index), taken)
        taken.add(chosen.casefold())
        names.append(chosen)
    return names


def _free(base: str, taken: set[str]) -> str:
    """`base` (a device name's stem given `-2`), or `base-2`, `base-3`, ...: the first that
    is not taken."""
    stem, dot, rest = base.partition(".")
    if stem.casefold() in _RESERVED:  # `con.txt` names the console on Windows too
        base = f"{stem}-2{dot}{rest}"
    candidate, n = base, 1
    while candidate.casefold() in taken:
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def names_in(batch: Path, names: Sequence[str]) -> list[str]:
    """The names the batch folder `batch` uses for tasks that `run_names` named `names`: those,
    or each task's place when the folder was written in the older layout (its `runs/` holds a
    place name that `names` does not make). Only `runs/` is looked at, so every reader of the
    folder (the batch, an experiment's rows, regrading, the view) names its runs alike."""
    made = set(names)
    if any(_POSITIONAL.fullmatch(n) and n not in made for n in _entries(batch / "runs")):
        return [positional_name(index) for index in range(len(names))]
    return list(names)


def _entries(folder: Path) -> list[str]:
    try:
        with os.scandir(folder) as entries:
            return [entry.name for entry in entries]
    except OSError:  # no runs yet
        return []
