"""The run's journal: what a resumed run needs, written ahead of every external effect.

`journal.jsonl` sits beside `events.jsonl` in the run directory, one record per line
(`record.records`, format version `JOURNAL_VERSION`, docs/durability.md). The records made
between two external effects are held and written together, with one unbuffered `write(2)`,
at the run's next write barrier (`RunDeps.write_ahead`), right after the events', before the
next model call, tool run, commit or question starts (`record.lines`).

Records: `journal_opened` (the run id and the format version, once per process that writes),
`call_started` (an agent call that owns a worktree, before its first model call: a resumed run
restarts the call in that same worktree) and `call_finished` (an agent call or a session turn
that returned, with its whole product). Every call record carries its key: the branch path,
the call's index among the calls of its branch, the agent, and a digest of what was sent.
Below them, every model call (`calls.journal`): `model_call_started` at the barrier before it
is sent, `model_call_finished` once it is settled (`model_call_failed` when its model raised),
keyed by branch, agent, purpose and a digest of the request, so that a call cut short replays
the model calls it had finished.

What the event stream holds already is not journaled again: a resumed run takes a person's
answers (`human_answered`, by token) and its message board (`thread_created`,
`board_message_posted`, `mention_delivered`) from the earlier processes' events, read in the
same pass as the rest of the log (`Recorded.take_event`).
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from swarmflow.core.errors import ConfigError
from swarmflow.record.eventlog import VALIDATE_ENV
from swarmflow.record.events import (
    BoardMessagePosted,
    HumanAnswered,
    MentionDelivered,
    ThreadCreated,
)
from swarmflow.record.jsonline import json_line
from swarmflow.record.lines import LineWriter, read_lines
from swarmflow.record.records import (
    JOURNAL_VERSION,
    CallFinished,
    CallStarted,
    JournalOpened,
    ModelCallFailed,
    ModelCallFinished,
    ModelCallRecord,
    ModelCallStarted,
    RecordBase,
    kind_of,
    parse_record,
)

_DIGEST_BYTES = 16

BoardFact = ThreadCreated | BoardMessagePosted | MentionDelivered
"""An event a resumed run rebuilds its board from (`teams.board_journal`)."""

_FROM_EVENTS: dict[str, type[BoardFact | HumanAnswered]] = {
    "thread_created": ThreadCreated,
    "board_message_posted": BoardMessagePosted,
    "mention_delivered": MentionDelivered,
    "human_answered": HumanAnswered,
}


class CallKey(NamedTuple):
    """Where a call sits in the flow and what it sent (a tuple: made on every call)."""

    branch: str
    place: int
    """The call's index among the journaled calls of its branch (`index` in the record)."""
    agent: str
    digest: str

    def as_dict(self) -> dict[str, str | int]:
        return {
            "branch": self.branch,
            "index": self.place,
            "agent": self.agent,
            "digest": self.digest,
        }

    def where(self) -> str:
        return f"call {self.place} of branch {self.branch or '(root)'} (agent {self.agent!r})"


def digest_of(*parts: str) -> str:
    """A stable digest of the parts (NUL-separated, so ("ab", "c") differs from ("a", "bc"))."""
    material = "\x00".join(parts).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(material, digest_size=_DIGEST_BYTES).hexdigest()


@dataclass(slots=True)
class Record:
    """One finished call from an earlier part of the run."""

    key: CallKey
    data: CallFinished
    used: bool = False


@dataclass(slots=True)
class Recorded:
    """What an interrupted run left, indexed for replay: its calls from the journal, its
    answers and its board from the event log."""

    finished: dict[tuple[str, str, str], list[Record]] = field(default_factory=dict)
    at: dict[tuple[str, int], Record] = field(default_factory=dict)
    started: dict[CallKey, CallStarted] = field(default_factory=dict)
    answers: dict[str, HumanAnswered] = field(default_factory=dict)
    """A person's answers, by the token of the question and payload they were given for."""
    board: list[BoardFact] = field(default_factory=list)
    """The board's events, in log order."""
    finished_at: list[tuple[int, str]] = field(default_factory=list)
    """Per `call_finished` record: its `event_seq` and its session."""
    model_calls: dict[ModelKeyTuple, list[ModelCallFinished]] = field(default_factory=dict)
    """The settled model calls, by key, in the order they were written."""
    model_starts: Counter[ModelKeyTuple] = field(default_factory=Counter)
    """How many times each model call was started, less the starts that failed."""

    @property
    def calls(self) -> int:
        return len(self.at)

    def add(self, record: RecordBase) -> None:
        """Index one journal record."""
        if isinstance(record, CallFinished):
            self._finished(record)
        elif isinstance(record, CallStarted):
            self.started[_key_of(record)] = record
        elif isinstance(record, ModelCallFinished):
            self.model_calls.setdefault(_model_key(record), []).append(record)
        elif isinstance(record, ModelCallStarted):
            self.model_starts[_model_key(record)] += 1
        elif isinstance(record, ModelCallFailed):  # a start that ended, unsettled
            self.model_starts[_model_key(record)] -= 1

    def _finished(self, record: CallFinished) -> None:
        key = _key_of(record)
        self.finished_at.append((record.event_seq, record.session))
        entry = Record(key, record)
        old = self.at.get((key.branch, key.place))
        if old is not None and old.key == key:  # the same call finished again: keep the latest
            self._pool(key).remove(old)
        self.at[(key.branch, key.place)] = entry
        pool = self._pool(key)
        pool.append(entry)
        pool.sort(key=lambda r: r.key.place)

    def take_event(self, event: dict[str, Any]) -> None:
        """Keep an event of the log that a resume needs (the others are left alone).

        Raises:
            ValidationError: the event is not what its type says.
        """
        cls = _FROM_EVENTS.get(event.get("type", ""))
        if cls is None:
            return
        fact = cls.model_validate(event)
        if isinstance(fact, HumanAnswered):
            if fact.token:  # a timeout that failed the run answered nothing
                self.answers[fact.token] = fact
        else:
            self.board.append(fact)

    def _pool(self, key: CallKey) -> list[Record]:
        return self.finished.setdefault((key.branch, key.agent, key.digest), [])


ModelKeyTuple = tuple[str, str, str, str]
"""A model call's key: branch, agent, purpose, request digest."""


def _model_key(record: ModelCallRecord) -> ModelKeyTuple:
    k = record.key
    return (k.branch, k.agent, k.purpose, k.digest)


def _key_of(record: CallStarted | CallFinished) -> CallKey:
    k = record.key
    return CallKey(k.branch, k.index, k.agent, k.digest)


def read_journal(path: Path) -> Recorded:
    """Index the records of `path` (its answers and board come from the event log: see
    `Recorded.take_event`). A torn last line is cut off; a line that is not a record of this
    format version is a `ConfigError` naming the file and the line."""
    recorded = Recorded()
    if not path.exists():
        return recorded

    def take(raw: bytes) -> None:
        record = parse_record(raw)
        if isinstance(record, JournalOpened) and record.version != JOURNAL_VERSION:
            raise ConfigError(
                f"journal format version {record.version} is not supported (this swarmflow "
                f"reads version {JOURNAL_VERSION}); resume the run with the swarmflow that "
                "started it"
            )
        recorded.add(record)

    read_lines(path, "a journal record", take)
    return recorded


_KEYED_HEADS: dict[type[RecordBase], bytes] = {}
"""The start of a keyed record's line, by its kind (`Journal.write_keyed`)."""


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
        self.previous = previous
        self.strict = strict
        self.diverged: CallKey | None = None
        """The first call that no longer matched the record at its place (then: all live)."""
        self.replayed = 0
        self._counters: dict[str, int] = {}
        self._out = LineWriter(path, fsync=fsync, scrub=scrub)
        # With validation on (the test suite), every line is read back with its model.
        self._validate = os.environ.get(VALIDATE_ENV) == "1"
        self.write(JournalOpened, {"version": JOURNAL_VERSION, "run_id": run_id})

    def key(self, branch: str, agent: str, digest: str) -> CallKey:
        """The next call's key in `branch` (indices count every journaled call there)."""
        index = self._counters.get(branch, 0)
        self._counters[branch] = index + 1
        return CallKey(branch, index, agent, digest)

    def write(self, cls: type[RecordBase], fields: Mapping[str, object]) -> None:
        """Hold one record of kind `cls`, from its fields, until the next `flush`.

        No model is built: the fields are serialised as they are, as the event log does.
        Plain JSON types and the core's dataclasses serialise fastest; a pydantic value goes
        through pydantic's own JSON conversion.
        """
        line = json_line({"kind": kind_of(cls), **fields})
        if self._validate:
            _check(cls, line)
        self._out.hold(line)

    def write_keyed(self, cls: type[RecordBase], key: bytes, fields: dict[str, Any] | None) -> None:
        """`write`, for a record whose `key` is already JSON (a model call's, rendered once
        for both of its records); `fields` are the others, as `write` takes them."""
        head = _KEYED_HEADS.get(cls)
        if head is None:
            head = _KEYED_HEADS[cls] = b'{"kind":"%s","key":' % kind_of(cls).encode()
        if not fields:
            line = head + key + b"}"
        else:
            try:  # plain fields: orjson's bytes are copied once, into the line
                body = orjson.dumps(fields)
            except orjson.JSONEncodeError:  # anything else goes the one line writer's way
                body = json_line(fields)
            line = b"%s%s,%s" % (head, key, body[1:])
        if self._validate:
            _check(cls, line)
        self._out.hold(line)

    def flush(self) -> None:
        """Write every held record, in one write(2) (and sync it with `fsync`)."""
        self._out.flush()

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

    def model_call(self, key: ModelKeyTuple) -> ModelCallFinished | None:
        """The earliest unused settled model call with this key, or None (then it is paid).

        Any order matches: two branches that finish in another order still find their own
        calls, since a key holds the branch and what was sent. Once the flow diverged from
        its journal, every call runs, model calls too."""
        if self.previous is None or self.diverged is not None:
            return None
        pool = self.previous.model_calls.get(key)
        if not pool:
            return None
        self.previous.model_starts[key] -= 1
        return pool.pop(0)

    def was_in_flight(self, key: ModelKeyTuple) -> bool:
        """Whether an earlier process started this model call and died before it settled
        (the call is then paid again); each such start answers once."""
        if self.previous is None:
            return False
        starts = self.previous.model_starts
        if starts.get(key, 0) <= len(self.previous.model_calls.get(key, ())):
            return False
        starts[key] -= 1
        return True

    def in_flight(self, key: CallKey) -> CallStarted | None:
        """The `call_started` record of this call from a process that died before it finished."""
        if self.previous is None:
            return None
        return self.previous.started.get(key)

    def answer(self, token: str) -> HumanAnswered | None:
        """A recorded answer to the question shown with `token`."""
        if self.previous is None:
            return None
        return self.previous.answers.get(token)

    def close(self) -> None:
        self._out.close()


def _check(cls: type[RecordBase], line: bytes) -> None:
    """A written line reads back as a record of `cls` (the test suite's check)."""
    record = parse_record(line)
    if type(record) is not cls:
        raise TypeError(f"a {cls.__name__} line read back as {type(record).__name__}")
