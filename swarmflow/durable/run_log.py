"""A run's `events.jsonl` read back once: where it stopped, what it spent, the answers given
and the board (`read_run` reads the journal beside it). Lines are read by the one line reader
(`record.lines`: a torn last line is cut off, each other line located when it is bad)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swarmflow.core.budget import Charge
from swarmflow.record.files import EVENTS_FILE, JOURNAL_FILE
from swarmflow.record.journal import Recorded, read_journal
from swarmflow.record.jsonline import json_object
from swarmflow.record.lines import read_lines


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
