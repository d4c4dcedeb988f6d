"""Run directories read back: how a run was started, where its log stands, what it spent.

A run directory holds `events.jsonl` (the event stream), `journal.jsonl` (what a resumed run
replays, see `swarmflow.record.journal`) and `run.json` (how the run was started: the flow, its
inputs, the repository and the model, so that `swarmflow resume` can start it again). A resume
reads both files once: the journal for the calls, the log for where it stopped, what was
spent, the answers given and the board (`read_run`).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from swarmflow.core.budget import Charge
from swarmflow.core.errors import ConfigError
from swarmflow.durable.replay import spend
from swarmflow.record.events import RunResumed
from swarmflow.record.files import EVENTS_FILE, JOURNAL_FILE
from swarmflow.record.journal import Journal, Recorded, read_journal
from swarmflow.record.jsonline import json_object
from swarmflow.record.lines import read_lines
from swarmflow.record.records import CallFinished, CallStarted
from swarmflow.record.sink import EventSink
from swarmflow.runtime.context import RunContext
from swarmflow.runtime.flow import Flow

Durability = Literal["write", "fsync"]
"""`write`: every event and record is written (one write(2)) before the next effect starts,
which survives the process being killed; `fsync`: also synced to disk (survives a power cut)."""

MANIFEST = "run.json"
MANIFEST_VERSION = 1


def flow_reference(flow: Flow[..., Any]) -> str:
    """How to load `flow` again: a `.swarm` file, `module:name`, or `file.py:name`."""
    source = getattr(flow, "source_path", None)
    if source:
        return str(Path(source).resolve())
    fn = flow.fn
    module = getattr(fn, "__module__", "") or ""
    name = getattr(fn, "__qualname__", flow.name)
    if module == "__main__" or "<" in name:
        import inspect

        try:
            file = inspect.getsourcefile(fn)
        except TypeError:
            file = None
        return f"{Path(file).resolve()}:{flow.name}" if file else ""
    return f"{module}:{flow.name}"


def write_manifest(
    run_dir: Path, flow: Flow[..., Any], inputs: dict[str, Any], *, repo: Any, model: Any
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
    _write_whole(path, json.dumps(data, indent=2, default=str) + "\n")


def _write_whole(path: Path, text: str) -> None:
    """Write `path` so that a reader, or a run killed mid-write, sees all of it or none of it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / MANIFEST
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not a run manifest ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a run manifest (not a JSON object)")
    return data


@dataclass(slots=True)
class LogState:
    """What an interrupted run's event log says: where to go on, what was spent."""

    run_id: str = ""
    flow: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    next_seq: int = 0
    status: str = "running"
    """The last `run_finished` status, or "running" when the log has none since its start."""
    spent: Charge = Charge(0, 0.0, 0)
    """What every model call so far cost (replayed calls made none)."""
    started: float = 0.0
    last: float = 0.0
    elapsed: float = 0.0
    """Seconds the run's processes ran so far, each from its first event to its last (the
    time between a process's death and its resume is not counted)."""


def has_log(run_dir: Path) -> bool:
    """Whether `run_dir` holds an event log (a run was started there)."""
    return (run_dir / EVENTS_FILE).exists()


def read_log(run_dir: Path, into: Recorded | None = None) -> LogState:
    """Scan `events.jsonl` once (a torn last line is cut off first); `into`: also keep there
    the events a resume needs (`Recorded.take_event`)."""
    state = LogState()
    path = run_dir / EVENTS_FILE
    if not path.exists():
        return state
    scan = _LogScan(state)

    def take(raw: bytes) -> None:
        event = json_object(raw)
        scan.take(event)
        if into is not None:
            into.take_event(event)

    read_lines(path, "an event", take)
    state.spent = Charge(scan.tokens, scan.cost, scan.calls)
    return state


def read_run(run_dir: Path) -> tuple[LogState, Recorded]:
    """Both files of a run directory, read once: its log, and what a resume takes from the
    journal and the log together."""
    recorded = read_journal(run_dir / JOURNAL_FILE)
    return read_log(run_dir, into=recorded), recorded


@dataclass(slots=True)
class _LogScan:
    """`read_log`'s running totals."""

    state: LogState
    tokens: int = 0
    cost: float = 0.0
    calls: int = 0
    before: float = 0.0
    """The time of the processes before the current one."""
    opened: float = 0.0
    """When the current process wrote its first event."""

    def take(self, event: dict[str, Any]) -> None:
        state, kind = self.state, event.get("type")
        state.next_seq = int(event.get("seq", -1)) + 1
        state.last = float(event.get("ts", 0.0))
        if kind in ("run_started", "run_resumed"):
            self.before, self.opened = state.elapsed, state.last
            state.status = "running"
        state.elapsed = self.before + max(0.0, state.last - self.opened)
        if kind == "run_started":
            state.run_id, state.flow = str(event["run_id"]), str(event.get("flow", ""))
            state.inputs, state.started = dict(event.get("inputs") or {}), state.last
        elif kind == "run_finished":
            state.status = str(event.get("status", ""))
            # The ledger's clock starts before the first event is written (the run directory
            # is made in between): its own count, recorded here, is the truer one.
            state.elapsed = max(state.elapsed, float(event.get("seconds", 0.0)))
        elif kind == "model_called":
            self.tokens += int(event.get("tokens_in", 0)) + int(event.get("tokens_out", 0))
            self.cost += float(event.get("cost", 0.0))
            self.calls += 1


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
    log, recorded = read_run(path)
    if log.status == "ok":
        raise ConfigError(f"run {path.name} already finished ok; there is nothing to resume")
    return Interrupted(path, log, recorded, read_manifest(path))


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


# -- liveness, listing, cleaning --------------------------------------------------------------

LOCK = "run.pid"


def claim(run_dir: Path) -> None:
    """Mark the run as live in this process (`resume` and `clean` refuse a live run)."""
    (run_dir / LOCK).write_text(str(os.getpid()), encoding="utf-8")


def release(run_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (run_dir / LOCK).unlink()


def live_pid(run_dir: Path) -> int | None:
    """The pid of a process still running this run, if any (a killed one leaves a stale file)."""
    try:
        pid = int((run_dir / LOCK).read_text(encoding="utf-8").strip())
        written = (run_dir / LOCK).stat().st_mtime
    except (OSError, ValueError):
        return None
    if pid == os.getpid() or not _alive(pid):
        return None
    # A killed run's file outlives it, and its pid may since name another process.
    return None if _started_after(pid, written) else pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, but another user's
        return True
    return True


def _started_after(pid: int, moment: float) -> bool:
    """Whether process `pid` started after `moment` (so it did not write a file then); False
    where /proc cannot tell."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[19])  # starttime, field 22: clock ticks after boot
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
    except (OSError, ValueError, IndexError, StopIteration):
        return False
    return boot + ticks / os.sysconf("SC_CLK_TCK") > moment + 1.0  # btime is whole seconds


@dataclass(slots=True)
class RunRow:
    run_id: str
    status: str
    """ok, failed, cancelled, paused; `running` while its process lives, else `dead`."""
    log: LogState


def list_runs(root: Path) -> list[RunRow]:
    """Every run directory under `root`, newest first."""
    if not root.is_dir():
        return []
    rows = []
    for run_dir in root.iterdir():
        if not (run_dir / EVENTS_FILE).is_file():
            continue
        log = read_log(run_dir)
        status = log.status
        if status == "running" and live_pid(run_dir) is None:
            status = "dead"
        rows.append(RunRow(log.run_id or run_dir.name, status, log))
    return sorted(rows, key=lambda r: r.log.started, reverse=True)


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
