"""The run ids an experiment derives from its arms and tasks, always valid.

A rubric judge's run is named after the run it grades (`<arm>-<task>-r<repeat>`, and
`-2`, `-3`, ... for a judge asked again). Arm names and task ids may hold what a run id may
not (`a..b`), or be long enough together to pass its 128 characters; such a key's readable
form is cut and given a short hash of the key instead, so two keys never share a name. Every
id is checked when the experiment is planned, before anything is paid.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from swarmflow.experiments.layout import RunKey
from swarmflow.record.runs_root import RUN_ID_PATTERN, check_run_id

ROOM = 8
"""Characters kept free for the `-N` of a judge asked again."""
_LONGEST = 128 - ROOM


def judge_run_id(key: RunKey) -> str:
    """The readable `<arm>-<task>-r<repeat>` where it is a valid run id, else a cut,
    cleaned form of it with a hash of the key."""
    readable = f"{key.arm}-{key.task}-r{key.repeat}"
    if _valid(readable) and len(readable) <= _LONGEST:
        return readable
    digest = hashlib.sha256(key.text.encode("utf-8")).hexdigest()[:12]
    tail = f"-{digest}-r{key.repeat}"
    cleaned = re.sub(r"\.{2,}", ".", readable)[: _LONGEST - len(tail)].rstrip(".-_")
    return f"{cleaned}{tail}"


def _valid(run_id: str) -> bool:
    return RUN_ID_PATTERN.fullmatch(run_id) is not None and ".." not in run_id


def check_derived_ids(keys: Iterable[RunKey]) -> None:
    """Every id the experiment will derive, checked before it runs (`ConfigError`)."""
    for key in keys:
        check_run_id(judge_run_id(key), where=f"the judge's run id for {key.text}")
