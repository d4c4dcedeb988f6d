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
import math
import os
import re
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from swarmflow.core.budget import Charge
from swarmflow.core.errors import ConfigError
from swarmflow.durable.replay import spend
from swarmflow.durable.run_lock import hold_run, let_go
from swarmflow.record.events import RunResumed
from swarmflow.record.files import EVENTS_FILE, JOURNAL_FILE
from swarmflow.record.journal import CallKey, Journal, Recorded, read_journal
from swarmflow.record.jsonline import json_object
from swarmflow.record.lines import read_lines
from swarmflow.record.records import CallFinished, CallStarted
from swarmflow.record.run_paths import recorded_worktree
from swarmflow.record.runs_root import check_run_id, run_dir_in
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
        data = json.loads(_read_regular(path))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        why = " ".join(str(exc).split())[:200]
        raise ConfigError(f"{path}: not a run manifest ({why})") from None
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


def _read_regular(path: Path, limit: int = 1 << 24) -> str:
    """The text of `path`, a regular file of at most `limit` bytes (a FIFO or a device there
    is refused at once, never waited on)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            raise ConfigError(f"{path}: not a run manifest (not a regular file of at most "
                              f"{limit} bytes)")  # fmt: skip
        return fh.read(limit).decode("utf-8")


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
    clock: float = 0.0
    """The run clock (`t`) of the last event: a resumed process's clock goes on from there."""


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
        state.next_seq = _count(event, "seq", -1) + 1
        state.last = _amount(event, "ts")
        state.clock = max(state.clock, _amount(event, "t"))
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
            state.elapsed = max(state.elapsed, _amount(event, "seconds"))
        elif kind == "model_called":
            self.tokens += _count(event, "tokens_in") + _count(event, "tokens_out")
            self.cost += _amount(event, "cost")
            self.calls += event.get("payment") != "replayed"  # counted where it was paid


def _count(event: dict[str, Any], name: str, default: int = 0) -> int:
    """A count of the event (a sequence number, tokens): a whole number, not negative."""
    value = event.get(name, default)
    if value == default:
        return default
    if type(value) is not int or value < 0:
        raise ValueError(f"{name}: {str(value)[:40]} is not a count")
    return value


def _amount(event: dict[str, Any], name: str) -> float:
    """A time or a cost of the event: a finite number, not negative."""
    value = event.get(name, 0.0)
    if type(value) not in (int, float) or not 0.0 <= value < math.inf:
        raise ValueError(f"{name}: {str(value)[:40]} is not a finite number of at least 0")
    return float(value)


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


# -- liveness, listing, cleaning --------------------------------------------------------------

LOCK = "run.pid"


def fresh_run_dir(root: Path, run_id: str) -> Path:
    """The directory of a new run `run_id` under `root`, made and taken for this process.

    A directory that holds a run already (its events or its journal) is refused: a second
    run there would append to the first one's record, its sequence numbers starting again.
    So is one a live process has taken: `run.pid` is made at once (whole, or not at all), so
    of two processes starting one run id together only one starts.

    Raises:
        ConfigError: the run id cannot name a directory, or the directory is taken.
    """
    run_dir = run_dir_in(root, run_id)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot make the run directory {run_dir}: {exc.strerror}") from None
    hold_run(run_dir)
    try:
        if _holds_run(run_dir):
            raise ConfigError(
                f"{run_dir} already holds run {run_id}; resume it (`swarmflow resume "
                f"{run_dir}`, or run(..., resume=...)) or start the run under another run_id"
            )
        _take(run_dir)
    except BaseException:
        let_go(run_dir)
        raise
    return run_dir


def _holds_run(run_dir: Path) -> bool:
    """Whether a run wrote its record in `run_dir` (an empty file is no run's)."""
    for name in (EVENTS_FILE, JOURNAL_FILE):
        with contextlib.suppress(FileNotFoundError):
            if (run_dir / name).stat().st_size > 0:
                return True
    return False


def _take(run_dir: Path) -> None:
    """Make `run.pid` for this process unless a live one is there (a stale one, of a process
    that is gone, is replaced). The file appears whole: it is written aside, then linked."""
    lock, aside = run_dir / LOCK, run_dir / f".{LOCK}.{os.getpid()}.tmp"
    aside.write_text(str(os.getpid()), encoding="utf-8")
    try:
        if _linked(aside, lock):
            return
        pid = live_pid(run_dir)
        if pid is not None:
            raise ConfigError(
                f"{run_dir} is taken by a live run (process {pid}); not starting another there"
            )
        os.replace(aside, lock)
    finally:
        aside.unlink(missing_ok=True)


def _linked(aside: Path, lock: Path) -> bool:
    """Put `aside` at `lock` unless a file is there; whether it was put."""
    try:
        os.link(aside, lock)
    except FileExistsError:
        return False
    except OSError:  # a file system without hard links: checked, then replaced whole
        if lock.exists():
            return False
        os.replace(aside, lock)
    return True


def claim(run_dir: Path) -> None:
    """Mark the run as live in this process (`resume` and `clean` refuse a live run); the
    file is replaced whole, so a reader never finds it empty."""
    _write_whole(run_dir / LOCK, str(os.getpid()))


def release(run_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (run_dir / LOCK).unlink()
    let_go(run_dir)


_PID = re.compile(rb"\s*([1-9][0-9]{0,9})\s*")
_PID_MAX = 2**31 - 1


def live_pid(run_dir: Path) -> int | None:
    """The pid of a process still running this run, if any (a killed one leaves a stale file;
    anything in it but a pid, or anything there but a small regular file, is no live run)."""
    recorded = _recorded_pid(run_dir / LOCK)
    if recorded is None:
        return None
    pid, written = recorded
    if pid == os.getpid() or not _alive(pid):
        return None
    # A killed run's file outlives it, and its pid may since name another process.
    return None if _started_after(pid, written) else pid


def _recorded_pid(path: Path) -> tuple[int, float] | None:
    """The pid in `path` and when it was written; None unless it is a regular file holding a
    pid alone (a symbolic link, a FIFO or a device is not opened for reading)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        found = _PID.fullmatch(fh.read(64))
    if found is None or int(found[1]) > _PID_MAX:
        return None
    return int(found[1]), info.st_mtime


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
