"""The run's journal: what a resumed run needs, written ahead of every external effect.

`journal.jsonl` sits beside `events.jsonl` in the run directory. It holds one JSON record per
line. The records made between two external effects are held and written together, with one
unbuffered `write(2)`, at the run's next write barrier (`RunContext.write_ahead`), which comes
before the next model call, tool run, commit or question starts; a process killed at any
moment leaves whole lines. With `durability="fsync"` each barrier's write is also fsynced
(a power cut).

Records (format version 1, docs/durability.md):

- `journal_opened`: the run id and the format version, once per process that writes.
- `call_started`: an agent call that owns a workspace, before its first model call, with where
  its workspace lives (a resumed run restarts the call in that same worktree).
- `call_finished`: an agent call or a session turn that returned, with its whole product.
- `human_answered`: a person's answer, bound to the token of the question and payload shown.
- `board_thread`, `board_message`, `board_delivered`: the run's message board
  (`runtime.board_journal`).

Every call record carries its key: the branch path, the call's index among the calls of its
branch, the agent, and a digest of what was sent.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from swarmflow.core.budget import Charge
from swarmflow.core.errors import ConfigError
from swarmflow.record.jsonline import json_line, take_json_objects

JOURNAL_FILE = "journal.jsonl"
JOURNAL_VERSION = 1
_DIGEST_BYTES = 16
_BOARD_KINDS = frozenset({"board_thread", "board_message", "board_delivered"})


class CallKey(NamedTuple):
    """Where a call sits in the flow and what it sent (a tuple: made on every call)."""

    branch: str
    place: int
    """The call's index among the journaled calls of its branch (`index` in the record)."""
    agent: str
    digest: str

    def as_dict(self) -> dict[str, Any]:
        return {"branch": self.branch, "index": self.place, "agent": self.agent,
                "digest": self.digest}  # fmt: skip

    def where(self) -> str:
        return f"call {self.place} of branch {self.branch or '(root)'} (agent {self.agent!r})"


def digest_of(*parts: str) -> str:
    """A stable digest of the parts (NUL-separated, so ("ab", "c") differs from ("a", "bc"))."""
    material = "\x00".join(parts).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(material, digest_size=_DIGEST_BYTES).hexdigest()


@dataclass(slots=True)
class Record:
    """One finished call (or answer) from an earlier part of the run."""

    key: CallKey
    data: dict[str, Any]
    used: bool = False


@dataclass(slots=True)
class Recorded:
    """What the journal of an interrupted run holds, indexed for replay."""

    finished: dict[tuple[str, str, str], list[Record]] = field(default_factory=dict)
    at: dict[tuple[str, int], Record] = field(default_factory=dict)
    started: dict[CallKey, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    board: list[dict[str, Any]] = field(default_factory=list)
    """The board's records, in journal order (`runtime.board_journal`)."""
    board_marks: list[tuple[int, str]] = field(default_factory=list)
    """Per `call_finished` record: how many board records preceded it, and its session."""

    @property
    def calls(self) -> int:
        return len(self.at)

    def spent(self, *, unused_only: bool = False) -> Charge:
        """The spend the finished records account for (or those no call has replayed)."""
        tokens, cost, calls = 0, 0.0, 0
        for record in self.at.values():
            if unused_only and record.used:
                continue
            spend = record.data.get("spend") or {}
            tokens += int(spend.get("tokens", 0))
            cost += float(spend.get("cost", 0.0))
            calls += int(spend.get("calls", 0))
        return Charge(tokens, cost, calls)

    def add(self, record: dict[str, Any]) -> None:
        kind = record.get("kind")
        if kind == "human_answered":
            self.answers[str(record["token"])] = record
            return
        if kind in _BOARD_KINDS:
            self.board.append(record)
            return
        if kind not in ("call_started", "call_finished"):
            return
        key = _key_of(record)
        if kind == "call_started":
            self.started[key] = record
            return
        self.board_marks.append((len(self.board), str(record.get("session", ""))))
        entry = Record(key, record)
        old = self.at.get((key.branch, key.place))
        if old is not None and old.key == key:  # the same call finished again: keep the latest
            self._pool(key).remove(old)
        self.at[(key.branch, key.place)] = entry
        pool = self._pool(key)
        pool.append(entry)
        pool.sort(key=lambda r: r.key.place)

    def _pool(self, key: CallKey) -> list[Record]:
        return self.finished.setdefault((key.branch, key.agent, key.digest), [])


def _key_of(record: dict[str, Any]) -> CallKey:
    k = record["key"]
    return CallKey(str(k["branch"]), int(k["index"]), str(k["agent"]), str(k["digest"]))


def read_journal(path: Path) -> Recorded:
    """Index the records of `path`; a torn last line (a power cut mid-write) is cut off."""
    recorded = Recorded()
    if not path.exists():
        return recorded

    def take(number: int, record: dict[str, Any]) -> None:
        if record.get("kind") == "journal_opened" and record.get("version") != JOURNAL_VERSION:
            raise ConfigError(
                f"{path}:{number}: journal format version {record.get('version')} "
                f"is not supported (this swarmflow reads version {JOURNAL_VERSION})"
            )
        recorded.add(record)

    truncate_torn_tail(path)
    take_json_objects(path, "a journal record", take)
    return recorded


def truncate_torn_tail(path: Path) -> None:
    """Cut a last line that has no newline: it was torn by a crash mid-write."""
    with path.open("rb+") as fh:
        data = fh.read()
        if data and not data.endswith(b"\n"):
            fh.truncate(data.rfind(b"\n") + 1)


class Journal:
    """Writes this process's records and matches calls against an earlier process's."""

    def __init__(
        self,
        run_id: str,
        path: Path,
        *,
        fsync: bool = False,
        previous: Recorded | None = None,
        strict: bool = False,
        scrub: Callable[[bytes], bytes] | None = None,
    ) -> None:
        """`scrub`: the run's secret redactor for a serialised line (the event log's own), so
        that a secret a model or tool repeated never reaches the disk through the journal."""
        self.path = path
        self._scrub = scrub
        self.previous = previous
        self.strict = strict
        self.diverged: CallKey | None = None
        """The first call that no longer matched the record at its place (then: all live)."""
        self.replayed = 0
        self._fsync = fsync
        self._counters: dict[str, int] = {}
        # Unbuffered: each flush is one write(2), in the file before the next effect starts.
        self._fh = path.open("ab", buffering=0)
        self._held: list[bytes] = []
        self.write({"kind": "journal_opened", "version": JOURNAL_VERSION, "run_id": run_id})

    def key(self, branch: str, agent: str, digest: str) -> CallKey:
        """The next call's key in `branch` (indices count every journaled call there)."""
        index = self._counters.get(branch, 0)
        self._counters[branch] = index + 1
        return CallKey(branch, index, agent, digest)

    def write(self, record: dict[str, Any]) -> None:
        """Hold one record until the next `flush`. Callers pass plain JSON types: serialising
        those is several times cheaper than letting the serialiser inspect dataclasses and str
        subclasses, and this runs once per agent call."""
        line = json_line(record)
        self._held.append(line if self._scrub is None else self._scrub(line))

    def flush(self) -> None:
        """Write every held record, in one write(2) (and sync it with `fsync`)."""
        if not self._held:
            return
        data = b"\n".join(self._held) + b"\n"
        self._held.clear()
        _write_all(self._fh, data)
        if self._fsync:
            os.fsync(self._fh.fileno())

    def match(self, key: CallKey) -> Record | None:
        """The finished record this call replays, or None when it must run.

        A call replays the earliest unused record with its branch, agent and digest (its index
        may differ: concurrent calls in one branch can start in another order). A call with no
        such record while an unused record of another digest sits at its place means the flow
        changed there: the divergence is noted (or refused when strict), and from then on every
        call runs.
        """
        if self.previous is None or self.diverged is not None:
            return None
        pool = self.previous.finished.get((key.branch, key.agent, key.digest))
        for record in pool or ():
            if not record.used:
                record.used = True
                self.replayed += 1
                return record
        other = self.previous.at.get((key.branch, key.place))
        if other is not None and not other.used:
            self.diverged = key
        return None

    def in_flight(self, key: CallKey) -> dict[str, Any] | None:
        """The `call_started` record of this call from a process that died before it finished."""
        if self.previous is None:
            return None
        return self.previous.started.get(key)

    def answer(self, token: str) -> dict[str, Any] | None:
        """A recorded answer to the question shown with `token`."""
        if self.previous is None:
            return None
        return self.previous.answers.get(token)

    def close(self) -> None:
        if not self._fh.closed:
            self.flush()
            self._fh.close()


def _write_all(fh: Any, data: bytes) -> None:
    """A raw file may take less than asked for (a full disk, a signal): write the rest."""
    view = memoryview(data)
    while view:
        view = view[fh.write(view) :]
