"""Run directories listed (`swarmflow runs`) and checked before `swarmflow clean`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from swarmflow.core.errors import ConfigError
from swarmflow.durable.claims import live_pid
from swarmflow.durable.manifest import MANIFEST, read_manifest
from swarmflow.durable.run_log import LogState, read_log
from swarmflow.record.files import EVENTS_FILE


@dataclass(slots=True)
class RunRow:
    run_id: str
    status: str
    """ok, failed, cancelled, paused; `running` while its process lives, else `dead`."""
    log: LogState


def list_runs(root: Path) -> tuple[list[RunRow], list[str]]:
    """Every run directory under `root` that reads back, newest first, and one line for each
    that does not (a forged or broken record, read by the one reader), by name: one bad
    run does not hide the others."""
    if not root.is_dir():
        return [], []
    rows, bad = [], []
    for run_dir in sorted(root.iterdir()):
        if not (run_dir / EVENTS_FILE).exists():  # a FIFO there is a bad run, not no run
            continue
        try:
            rows.append(_row(run_dir))
        except ConfigError as exc:
            bad.append(str(exc))
    return sorted(rows, key=lambda r: r.log.started, reverse=True), bad


def _row(run_dir: Path) -> RunRow:
    log = read_log(run_dir)
    status = log.status
    if status == "running" and live_pid(run_dir) is None:
        status = "dead"
    return RunRow(log.run_id or run_dir.name, status, log)


def dead_run(run_dir: Path) -> tuple[Path, Path | None]:
    """The run directory and its repository, for `clean`; refuses a run still running."""
    run_dir = run_dir.resolve()
    if not (run_dir / EVENTS_FILE).exists() and not (run_dir / MANIFEST).exists():
        raise ConfigError(f"{run_dir} is not a run directory")
    pid = live_pid(run_dir)
    if pid is not None:
        raise ConfigError(f"run {run_dir.name} is still running (process {pid}); not cleaning")
    repo = read_manifest(run_dir).get("repo")
    return run_dir, Path(repo) if repo else None
