"""An interrupted run opened for `resume`: its log, its journal and its manifest read and
checked, and the resumed run's journal, sinks and ledger set from them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from swarmflow.core.errors import ConfigError
from swarmflow.durable.claims import live_pid
from swarmflow.durable.manifest import read_manifest
from swarmflow.durable.replay import spend
from swarmflow.durable.run_lock import hold_run, let_go
from swarmflow.durable.run_log import LogState, read_run
from swarmflow.record.events import RunResumed
from swarmflow.record.files import EVENTS_FILE, JOURNAL_FILE
from swarmflow.record.journal import CallKey, Journal, Recorded
from swarmflow.record.records import CallFinished, CallStarted
from swarmflow.record.run_paths import recorded_worktree
from swarmflow.record.runs_root import check_run_id
from swarmflow.record.sink import EventSink
from swarmflow.runtime.context import RunContext

Durability = Literal["write", "fsync"]
"""`write`: every event and record is written (one write(2)) before the next effect starts,
which survives the process being killed; `fsync`: also synced to disk (survives a power cut)."""


@dataclass(slots=True)
class Interrupted:
    """An interrupted run, ready to be resumed."""

    run_dir: Path
    log: LogState
    recorded: Recorded
    manifest: dict[str, Any]

    @property
    def run_id(self) -> str:
        return self.log.run_id or self.run_dir.name

    def inputs(self) -> dict[str, Any]:
        """The inputs the run was started with (the manifest's, typed, else the log's)."""
        recorded = self.manifest.get("inputs")
        return dict(recorded) if isinstance(recorded, dict) else dict(self.log.inputs)

    def worktree_base(self) -> str | None:
        """The commit the interrupted run's worktrees forked from, if it made any."""
        records: list[CallFinished | CallStarted] = [
            *(r.data for r in self.recorded.at.values()),
            *self.recorded.started.values(),
        ]
        for record in records:
            if record.workspace is not None and record.workspace.base:
                return record.workspace.base
        return None


def open_interrupted(run_dir: str | Path) -> Interrupted:
    """Read a run directory for `resume`; a clear error when it is not one."""
    path = Path(run_dir).resolve()
    if not (path / EVENTS_FILE).exists():
        if (path / JOURNAL_FILE).exists():  # its events went elsewhere (events="memory")
            raise ConfigError(
                f"{path} has no {EVENTS_FILE}: a run whose events were not written to its run "
                "directory cannot be resumed (its spend, answers and board are in its events)"
            )
        raise ConfigError(f"{path} is not a run directory (no {EVENTS_FILE} or {JOURNAL_FILE})")
    pid = live_pid(path)
    if pid is not None:
        raise ConfigError(f"run {path.name} is still running (process {pid}); not resuming it")
    hold_run(path)  # from here on, no other process reads or writes it until this run ends
    try:
        return _read_interrupted(path)
    except BaseException:
        let_go(path)
        raise


def _read_interrupted(path: Path) -> Interrupted:
    log, recorded = read_run(path)
    if log.status == "ok":
        raise ConfigError(f"run {path.name} already finished ok; there is nothing to resume")
    if log.run_id:
        check_run_id(log.run_id, where=f"{path / EVENTS_FILE}: the run's id")
    check_recorded_worktrees(path, recorded)
    return Interrupted(path, log, recorded, read_manifest(path))


def check_recorded_worktrees(run_dir: Path, recorded: Recorded) -> None:
    """Refuse a journal that names a worktree the run did not make: anywhere outside its
    `worktrees/` folder, a symbolic link, or on another branch than its own. A resume removes,
    recreates and resets the worktrees its journal names, so each is checked before any is."""
    calls: list[tuple[CallKey, CallFinished | CallStarted]] = [
        *((r.key, r.data) for r in recorded.at.values()),
        *recorded.started.items(),
    ]
    for key, record in calls:
        if record.workspace is None:
            continue
        try:
            recorded_worktree(run_dir, record.workspace.root, record.workspace.branch)
        except ConfigError as exc:
            raise ConfigError(f"{run_dir / JOURNAL_FILE}: {key.where()}: {exc.message}") from None


def open_journal(
    run_dir: Path,
    run_id: str,
    interrupted: Interrupted | None,
    *,
    durability: Durability,
    strict: bool,
    scrub: Callable[[bytes], bytes] | None = None,
) -> Journal:
    return Journal(
        run_id,
        run_dir / JOURNAL_FILE,
        fsync=durability == "fsync",
        previous=interrupted.recorded if interrupted else None,
        strict=strict,
        scrub=scrub,
    )


def check_durability(durability: str) -> None:
    if durability not in get_args(Durability):
        raise ConfigError(f"durability={durability!r}; use 'write' or 'fsync'")


def sync_sinks(sinks: list[EventSink], durability: Durability) -> list[EventSink]:
    """With `fsync`, file sinks sync every event to disk as they write it."""
    if durability == "fsync":
        for sink in sinks:
            if hasattr(sink, "fsync"):
                sink.fsync = True
    return sinks


def resumed(ctx: RunContext, flow: str, interrupted: Interrupted) -> None:
    """Record the resume and charge the run's ledger what the earlier processes spent (every
    model call is in their log: a replayed call charges only the ledgers below the run's,
    `durable.replay.charge_spent`); the wall clock goes on from the time the earlier
    processes ran, and new worktrees fork from the commit the earlier ones did."""
    ctx.deps.log.emit(
        RunResumed,
        flow=flow,
        recorded_calls=interrupted.recorded.calls,
        strict=ctx.deps.journal.strict if ctx.deps.journal else False,
    )
    spend([ctx.state.ledger], interrupted.log.spent)
    ctx.state.ledger.count_earlier_time(interrupted.log.elapsed)
    fork_from = getattr(ctx.deps.workspaces, "fork_from", None)
    base = interrupted.worktree_base()
    if fork_from is not None and base is not None:
        fork_from(base)
