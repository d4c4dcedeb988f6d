"""One run as the view shows it, folded from its event log as it grows: what is listed of it,
its timeline placed on lanes, its sessions, budgets, transcripts, refusals and adherence.

Memory is bounded however long a run is (`RunFold`): a log is read from where the last read
stopped, one line at a time, and only the page's parts are kept, each capped (`MAX_BLOCKS`,
`MAX_TRANSCRIPTS`, `MAX_PARTS`, `MAX_POSTS`); the cache keeps the folds of the `MAX_HELD`
runs looked at last. A page that polls a finished run reads its log once; a running run's
log is read on only when it grew (its size and modification time).
"""

from __future__ import annotations

import os
import threading
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from swarmflow.core.reading import LineTail, Unreadable
from swarmflow.record.events import (
    BoardMessagePosted,
    HarnessStarted,
    RunStarted,
    ThreadCreated,
    parse_event,
)
from swarmflow.record.files import EVENTS_FILE
from swarmflow.report.adherence import Adherence, AdherenceFold
from swarmflow.report.digest import Digest, SessionDigest, agent_label
from swarmflow.report.log import MAX_LINE, LogError, log_path, read_log
from swarmflow.report.timeline import Entry, Placed, Timeline, placed_lanes, span_of
from swarmflow.view.transcript import Part, journal_parts, parts_of

MIN_WIDTH = 0.4
"""The narrowest a block is drawn, in percent of the timeline, so instants stay clickable."""
FINAL = frozenset({"ok", "failed", "cancelled", "paused"})
MAX_BLOCKS = 5_000
"""The most timeline blocks a run's page holds: its last ones."""
MAX_TRANSCRIPTS = 40
"""The most sessions' transcripts a run's page holds: those of the sessions last at work."""
MAX_PARTS = 250
"""The most steps of one session's transcript a run's page holds: its last ones."""
MAX_POSTS = 250
"""The most posts of one board thread a run's page holds: its last ones."""
MAX_HELD = 64
"""The most runs whose folds the view keeps."""


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
    fold = RunFold(run_dir)
    fold.read()
    return fold.state()


class RunFold:
    """One run's log folded as it grows, holding a bounded amount however long the run.

    Each `read` takes the lines written since the last (`core.reading.LineTail`) and folds
    each event into the page's parts, one at a time; the events are not kept. What is kept:
    the digest and adherence folds (counts per session and agent), the run's last
    `MAX_BLOCKS` timeline blocks, the transcripts of the `MAX_TRANSCRIPTS` sessions most
    recently at work with each one's last `MAX_PARTS` steps, and each board thread's last
    `MAX_POSTS` posts; what was let go is counted, and the page says so. Once the run has
    ended, its journal's prompts and answers join the transcripts kept, within the same caps.
    """

    def __init__(self, run_dir: Path, *, light: bool = False) -> None:
        read_log(run_dir)  # a regular file whose first line is an event, or one `LogError`
        self.run_dir = run_dir
        self.light = light
        """Fold the digest alone (what a list of runs shows): no page parts."""
        self.tail = LineTail(log_path(run_dir), "an event log", MAX_LINE)
        self.digest = Digest()
        self.adherence = AdherenceFold()
        self.made = Timeline()
        self.blocks: deque[Entry] = deque(maxlen=MAX_BLOCKS)
        self.transcripts: OrderedDict[str, deque[Part]] = OrderedDict()
        self.threads: dict[str, deque[BoardMessagePosted]] = {}
        self.harnesses: set[str] = set()
        self.limits: dict[str, Any] = {}
        self.declared = False
        self.let_go = Counter[str]()
        """What was not kept: "blocks", "steps", "transcripts", "posts", "lines"."""

    def read(self) -> None:
        """Fold in the events written since the last read."""
        try:
            for _number, raw in self.tail.lines():
                self._take(raw)
        except Unreadable as exc:
            raise LogError(str(exc)) from None

    def _take(self, raw: bytes) -> None:
        try:
            e = parse_event(raw)
        except (ValidationError, ValueError):  # not an event: counted, said on the page
            self.let_go["lines"] += 1
            return
        self.digest.add(e)
        if self.light:
            return
        self.adherence.add(e)
        self._keep(self.blocks, self.made.entry(e), "blocks")
        if e.session:
            self._transcribe(e.session, parts_of(e))
        if isinstance(e, RunStarted):
            self.limits, self.declared = dict(e.limits), self.declared or bool(e.agents)
        elif isinstance(e, HarnessStarted):
            self.harnesses.add(e.agent or e.harness)
        elif isinstance(e, ThreadCreated):
            self.threads.setdefault(e.thread, deque(maxlen=MAX_POSTS))
        elif isinstance(e, BoardMessagePosted):
            posts = self.threads.setdefault(e.thread, deque(maxlen=MAX_POSTS))
            self._keep(posts, e, "posts")

    def _keep(self, held: deque[Any], item: Any, what: str) -> None:
        if item is None:
            return
        if len(held) == held.maxlen:
            self.let_go[what] += 1
        held.append(item)

    def _transcribe(self, session: str, parts: list[Part]) -> None:
        held = self.transcripts.get(session)
        if held is None:
            if len(self.transcripts) == MAX_TRANSCRIPTS:  # the longest idle one goes
                _, gone = self.transcripts.popitem(last=False)
                self.let_go["transcripts"] += 1
                self.let_go["steps"] += len(gone)
            held = self.transcripts[session] = deque(maxlen=MAX_PARTS)
        self.transcripts.move_to_end(session)
        for part in parts:
            self._keep(held, part, "steps")

    def state(self) -> RunState:
        """The page's view of the run as read so far."""
        d = self.digest
        entries = list(self.blocks)
        span = span_of(d, entries)
        ended = d.status in FINAL and not self.light
        return RunState(
            digest=d,
            note=self._note(),
            lanes=_placed(entries, span),
            span=span,
            budgets=_budgets(self.limits, d),
            transcripts=self._transcripts(ended),
            adherence=self.adherence.result() if self.declared else None,
            harnesses=set(self.harnesses),
            threads={thread: list(posts) for thread, posts in self.threads.items()},
        )

    def _transcripts(self, ended: bool) -> dict[str, list[Part]]:
        found = {s: list(parts) for s, parts in self.transcripts.items()}
        if ended:  # the journal is read once the run has ended, within the same caps
            for session, parts in journal_parts(self.run_dir, found, MAX_PARTS).items():
                found[session].extend(parts)
        return {s: sorted(parts, key=lambda p: p.order)[-MAX_PARTS:] for s, parts in found.items()}

    def _note(self) -> str:
        said = {
            "lines": "lines of the log are not events: left out",
            "blocks": f"earlier timeline blocks not drawn (the last {MAX_BLOCKS:,} are)",
            "steps": f"earlier transcript steps not kept (each session's last {MAX_PARTS:,} are)",
            "transcripts": f"sessions' transcripts let go (the {MAX_TRANSCRIPTS} most recently "
            "at work are kept)",
            "posts": f"earlier board posts not kept (each thread's last {MAX_POSTS} are)",
        }
        return "; ".join(f"{self.let_go[k]:,} {text}" for k, text in said.items() if self.let_go[k])


def _placed(entries: list[Entry], span: float) -> list[tuple[str, list[Placed]]]:
    """The lanes that have entries, placed (the page leaves an empty flow lane out)."""
    return [(lane, blocks) for lane, blocks in placed_lanes(entries, span, MIN_WIDTH) if blocks]


def _budgets(limits: dict[str, Any], d: Digest) -> list[Budget]:
    """Tokens, cost, calls and wall time spent, each against the run's limit where it set one."""
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


@dataclass
class _Held:
    """A run's fold, the state it last gave, and the log's state (size, time) it was read at."""

    fold: RunFold
    mark: tuple[int, int] = (-1, -1)
    state: RunState | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class StateCache:
    """Run states by run directory, each log read on from where it was when it changed on
    disk; the folds of the `MAX_HELD` runs looked at last are kept (another is read afresh).
    The digests that lists of runs show are folded apart and kept for every run (`digest`):
    a list of many runs does not push the pages' folds out."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: OrderedDict[Path, _Held] = OrderedDict()
        self._light: dict[Path, _Held] = {}

    def get(self, run_dir: Path) -> RunState:
        """The state of `run_dir`; `LogError` when it has no readable log."""
        return self._read(run_dir, self._entry(run_dir))

    def digest(self, run_dir: Path) -> RunState:
        """The state of `run_dir` with its digest alone (no timeline, no transcripts), as a
        list of runs shows it; `LogError` when it has no readable log."""
        with self._lock:
            held = self._light.get(run_dir)
        if held is None:
            made = _Held(RunFold(run_dir, light=True))
            with self._lock:
                held = self._light.setdefault(run_dir, made)
        return self._read(run_dir, held)

    def _read(self, run_dir: Path, held: _Held) -> RunState:
        mark = _mark(run_dir / EVENTS_FILE)
        with held.lock:  # one reader of a fold at a time; others wait for its state
            if held.state is None or held.mark != mark:
                held.fold.read()
                held.mark, held.state = mark, held.fold.state()
            return held.state

    def _entry(self, run_dir: Path) -> _Held:
        with self._lock:
            held = self._held.get(run_dir)
            if held is not None:
                self._held.move_to_end(run_dir)
                return held
        made = _Held(RunFold(run_dir))
        with self._lock:
            held = self._held.setdefault(run_dir, made)
            self._held.move_to_end(run_dir)
            while len(self._held) > MAX_HELD:
                self._held.popitem(last=False)
        return held


def _mark(path: Path) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise LogError(f"cannot read {path}: {exc.strerror or exc}") from None
    return st.st_size, st.st_mtime_ns


__all__ = ["Budget", "RunFold", "RunState", "StateCache", "read_state"]
