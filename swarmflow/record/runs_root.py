"""Where run directories go: the folder given, else `$SWARMFLOW_RUNS`, else `./runs`; and which
run ids may name one.

Apart from the runner, so that the command line names it without importing a run's machinery.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from swarmflow.core.errors import ConfigError

DEFAULT_RUNS_ROOT = "runs"
RUNS_ENV = "SWARMFLOW_RUNS"
"""Environment variable naming the folder that holds run directories (default `runs`)."""

RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""A run id: one directory name, a letter or digit first, then up to 127 letters, digits, dots,
dashes and underscores (and never `..`): it cannot name a folder outside the runs root."""


def resolve_runs_root(given: str | os.PathLike[str] | None = None) -> Path:
    """The folder that holds the run directories (relative paths stay relative)."""
    return Path(given or os.environ.get(RUNS_ENV) or DEFAULT_RUNS_ROOT)


def check_run_id(run_id: object, *, where: str = "run_id") -> str:
    """`run_id` when it may name a run directory (`RUN_ID_PATTERN`); else a `ConfigError`
    saying so, `where` naming what gave it."""
    if not isinstance(run_id, str) or RUN_ID_PATTERN.fullmatch(run_id) is None or ".." in run_id:
        raise ConfigError(
            f"{where} {run_id!r} cannot name a run directory: use 1 to 128 letters, digits, "
            "'.', '-' and '_', starting with a letter or digit (no '..')"
        )
    return run_id


def run_dir_in(root: Path, run_id: str) -> Path:
    """The run directory of `run_id` under `root`, absolute (`run_id` checked first)."""
    return (root / check_run_id(run_id)).resolve()


__all__ = [
    "DEFAULT_RUNS_ROOT",
    "RUNS_ENV",
    "RUN_ID_PATTERN",
    "check_run_id",
    "resolve_runs_root",
    "run_dir_in",
]
