"""Where run directories go: the folder given, else `$SWARMFLOW_RUNS`, else `./runs`.

Apart from the runner, so that the command line names it without importing a run's machinery.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_RUNS_ROOT = "runs"
RUNS_ENV = "SWARMFLOW_RUNS"
"""Environment variable naming the folder that holds run directories (default `runs`)."""


def resolve_runs_root(given: str | os.PathLike[str] | None = None) -> Path:
    """The folder that holds the run directories (relative paths stay relative)."""
    return Path(given or os.environ.get(RUNS_ENV) or DEFAULT_RUNS_ROOT)


__all__ = ["DEFAULT_RUNS_ROOT", "RUNS_ENV", "resolve_runs_root"]
