"""One run as the view shows it, read from its event log through the report's reader: what is
listed of it, its timeline placed on lanes, its sessions, budgets, transcripts, refusals and
adherence.

Reading is cached per file state (size and modification time): a page that polls a finished
run reads its log once, and a running run's log is read again only when it grew.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swarmflow.record.events import (
    BoardMessagePosted,
    EventBase,
    HarnessStarted,
    RunStarted,
    ThreadCreated,
)
from swarmflow.record.files import EVENTS_FILE
from swarmflow.report.adherence import Adherence, adherence
from swarmflow.report.digest import Digest, SessionDigest, agent_label, digest
from swarmflow.report.log import LogError, read_log
from swarmflow.report.timeline import Entry, Placed, placed_lanes, span_of, timeline
from swarmflow.view.transcript import Part, transcripts

MIN_WIDTH = 0.4
"""The narrowest a block is drawn, in percent of the timeline, so instants stay clickable."""
FINAL = frozenset({"ok", "failed", "cancelled", "paused"})


@dataclass(frozen=True, slots=True)
class Budget:
    """One limit of the run and what has been spent against it."""

    name: str
    spent: float
    limit: float | None

    @property
    def percent(self) -> float | None:
        return None if not self.limit else min(100.0, 100.0 * self.spent / self.limit)


@dataclass
class RunState:
    """Everything the view shows of one run."""

    digest: Digest
    note: str
    lanes: list[tuple[str, list[Placed]]]
    span: float
    budgets: list[Budget]
    transcripts: dict[str, list[Part]]
    adherence: Adherence | None
    harnesses: set[str] = field(default_factory=set)
    threads: dict[str, list[BoardMessagePosted]] = field(default_factory=dict)

    @property
    def live(self) -> bool:
        return self.digest.status not in FINAL

    def sessions(self) -> list[SessionDigest]:
        return list(self.digest.sessions.values())

    def harness_lanes(self) -> set[str]:
        """The timeline lanes of harness agents' sessions (named as `lane_of` names them)."""
        return {
            f"{agent_label(s.agent, s.branch)} · {s.id}"
            for s in self.digest.sessions.values()
            if s.agent in self.harnesses
        }


def read_state(run_dir: Path) -> RunState:
    """The run in `run_dir` read now; `LogError` (one line) when it has no readable log."""
    log = read_log(run_dir)
    stream = log.stream()
    events = list(stream)
    d = digest(events)
    entries = timeline(events)
    span = span_of(d, entries)
    ended = d.status in FINAL
    return RunState(
        digest=d,
        note=stream.note(),
        lanes=_placed(entries, span),
        span=span,
        budgets=_budgets(events, d),
        transcripts=transcripts(events, run_dir if ended else None),
        adherence=adherence(events) if _declared(events) else None,
        harnesses={e.agent or e.harness for e in events if isinstance(e, HarnessStarted)},
        threads=_threads(events),
    )


def _placed(entries: list[Entry], span: float) -> list[tuple[str, list[Placed]]]:
    """The lanes that have entries, placed (the page leaves an empty flow lane out)."""
    return [(lane, blocks) for lane, blocks in placed_lanes(entries, span, MIN_WIDTH) if blocks]


def _budgets(events: list[EventBase], d: Digest) -> list[Budget]:
    """Tokens, cost, calls and wall time spent, each against the run's limit where it set one."""
    start = next((e for e in events if isinstance(e, RunStarted)), None)
    limits: dict[str, Any] = dict(start.limits) if start is not None else {}
    total = d.total()
    spent = {
        "tokens": float(total.tokens_in + total.tokens_out),
        "cost": total.cost,
        "calls": float(total.calls),
        "seconds": d.seconds,
    }
    return [Budget(name, value, _limit(limits.get(name))) for name, value in spent.items()]


def _limit(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and value > 0 else None


def _declared(events: list[EventBase]) -> bool:
    return any(isinstance(e, RunStarted) and e.agents for e in events)


def _threads(events: list[EventBase]) -> dict[str, list[BoardMessagePosted]]:
    threads: dict[str, list[BoardMessagePosted]] = {}
    for e in events:
        if isinstance(e, ThreadCreated):
            threads.setdefault(e.thread, [])
        elif isinstance(e, BoardMessagePosted):
            threads.setdefault(e.thread, []).append(e)
    return threads


class StateCache:
    """Run states by run directory, read again only when the log changed on disk."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[Path, tuple[tuple[int, int], RunState]] = {}

    def get(self, run_dir: Path) -> RunState:
        """The state of `run_dir`; `LogError` when it has no readable log."""
        mark = _mark(run_dir / EVENTS_FILE)
        with self._lock:
            held = self._held.get(run_dir)
        if held is not None and held[0] == mark:
            return held[1]
        state = read_state(run_dir)
        with self._lock:
            self._held[run_dir] = (mark, state)
        return state


def _mark(path: Path) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise LogError(f"cannot read {path}: {exc.strerror or exc}") from None
    return st.st_size, st.st_mtime_ns


__all__ = ["Budget", "RunState", "StateCache", "read_state"]
