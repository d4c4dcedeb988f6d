"""The journal's records: frozen pydantic models in one union tagged by `kind`.

`journal.jsonl` holds one record per line (format version `JOURNAL_VERSION`, written in every
`journal_opened` record; docs/durability.md). A journal is read back with these models, so a
line that is not a record of this version is refused with its file and line. The run writes a
record from its plain fields and builds no model (`Journal.write`), as the event log writes
events; the test suite checks every written line against its model.

The core's own dataclasses (`Usage`, `Patch`, `Message`) are the fields' types: a record reads
back into them. On the write path the hot ones (`Usage`, `Message`, the spend) are turned into
plain dicts by the `*_fields` functions below, each beside its model: orjson serialises a dict
about three times as fast as a dataclass, and these go out with every call.

Annotations here are evaluated eagerly (no `from __future__ import annotations`), as in
`record.events`: pydantic then has real types at class creation.
"""

import json
import os
import re
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    TypeAdapter,
    ValidationError,
)

from swarmflow.core.budget import Charge
from swarmflow.core.experience_port import RecordedTrajectory
from swarmflow.core.messages import Message, ToolCall, Usage
from swarmflow.core.patch import Patch

JOURNAL_VERSION = 4
"""The journal format this swarmflow writes and reads (1: before the board's and the answers'
records moved to the event stream, and a finished call recorded its place in it; 2: before
every model call was journaled on its own)."""


# -- fields a resume hands to git or the file system ---------------------------------------------
# A journal is read back from disk, where anything that can write the run directory may have
# changed it: a value that becomes a path or a git argument is checked for its form here, so a
# forged one is refused with its file and line before anything acts on it.

_COMMIT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_REF_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]*")


def _commit_id(text: str) -> str:
    """A full commit id (SHA-1 or SHA-256, lower-case hex): never an option or a revision
    expression."""
    if _COMMIT_ID.fullmatch(text) is None:
        raise ValueError(f"{text[:80]!r} is not a full commit id")
    return text


def _commit_id_or_none(text: str) -> str:
    return text if text == "" else _commit_id(text)


def _branch_name(text: str) -> str:
    """A branch name that git cannot read as an option or a revision range."""
    if _REF_NAME.fullmatch(text) is None or ".." in text or "//" in text:
        raise ValueError(f"{text[:80]!r} is not a branch name swarmflow makes")
    return text


def _plain_absolute_path(text: str) -> str:
    """An absolute path with no `.` or `..` part (so that its text says where it is)."""
    if "\x00" in text or not os.path.isabs(text) or os.path.normpath(text) != text:
        raise ValueError(f"{text[:200]!r} is not an absolute path without '.' or '..' parts")
    return text


CommitId = Annotated[str, AfterValidator(_commit_id)]
"""A full commit id, as `git rev-parse` prints it."""
BranchName = Annotated[str, AfterValidator(_branch_name)]
PlainPath = Annotated[str, AfterValidator(_plain_absolute_path)]
Count = NonNegativeInt
Dollars = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]


class RecordBase(BaseModel):
    """What every record is: frozen, no field it does not declare."""

    # Schemas are built on first use: importing swarmflow must stay cheap.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Key(RecordBase):
    """A call's key (`record.journal.CallKey`)."""

    branch: str
    index: NonNegativeInt
    agent: str
    digest: str


class WorktreeAt(RecordBase):
    """Where a call's git worktree lives (the run's own provider also checks that `root` is
    in the run's `worktrees/` folder and `branch` the one it names after it)."""

    root: PlainPath
    branch: BranchName
    base: CommitId


@dataclass(frozen=True, slots=True)
class Spend:
    """What a call's ledgers were charged (a replay charges it again)."""

    tokens: Count = 0
    cost: Dollars = 0.0
    calls: Count = 0

    @property
    def charge(self) -> Charge:
        return Charge(self.tokens, self.cost, self.calls)


def spend_fields(usage: Usage, cost: float, calls: int) -> dict[str, float]:
    """A `Spend` as written."""
    return {"tokens": usage.total, "cost": cost, "calls": calls}


def usage_fields(usage: Usage) -> dict[str, int]:
    """A `Usage` as written."""
    return {"input": usage.input, "output": usage.output, "cached_input": usage.cached_input}


def _counted(usage: Usage) -> Usage:
    """Token counts are never negative (a replay adds them to its session's)."""
    if min(usage.input, usage.output, usage.cached_input) < 0:
        raise ValueError("a token count is negative")
    return usage


def _patch_commits(patch: Patch) -> Patch:
    """A recorded patch's commits are commit ids (a flow may hand them to git)."""
    _commit_id_or_none(patch.base)
    _commit_id_or_none(patch.commit)
    return patch


def message_fields(message: Message) -> dict[str, object]:
    """A `Message` as written; fields at their defaults are left out."""
    out: dict[str, object] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    return out


class JournalOpened(RecordBase):
    """Written by every process that writes to the journal, first."""

    kind: Literal["journal_opened"] = "journal_opened"
    version: int
    run_id: str


class CallStarted(RecordBase):
    """A call that works in a git worktree (its own or one it borrowed), before its first
    model call."""

    kind: Literal["call_started"] = "call_started"
    key: Key
    session: str
    workspace: WorktreeAt
    head: Annotated[str, AfterValidator(_commit_id_or_none)] = ""
    """The commit the worktree's HEAD was at when the call started: a restarted call is put
    back there ("" in a journal written before it was recorded: the worktree's base)."""


class CallFinished(RecordBase):
    """An agent call, or a session turn (`messages` set), that returned."""

    kind: Literal["call_finished"] = "call_finished"
    key: Key
    session: str
    event_seq: NonNegativeInt
    """The `seq` the run's next event took: every event before it came before the call
    returned (the board of a resumed run is rebuilt from the events by it)."""
    text: str = ""
    given: str = ""
    """The prompt (an agent call)."""
    value: object = None
    """The structured value as JSON."""
    patch: Annotated[Patch, AfterValidator(_patch_commits)] | None = None
    usage: Annotated[Usage, AfterValidator(_counted)] = Usage()
    spend: Spend = Spend()
    state: str = "done"
    reason: str = "completed"
    detail: str = ""
    provenance: list[str] = []
    workspace: WorktreeAt | None = None
    messages: list[Message] | None = None
    """A session turn: its part of the conversation."""
    replace_history: bool = False
    """A session turn: the conversation was compacted during the turn (`messages` is all of
    it)."""
    trajectory: RecordedTrajectory | None = None
    """With experience on: the session's history in brief and how it ended, which a resumed
    run's reflection reads for a call it replays."""


class ModelKey(RecordBase):
    """A model call's key (`calls.journal`): who made it, what for, and a digest of the
    request it sent (its messages, tools and output form; not its `max_tokens`, which the
    budget left at the time sets)."""

    branch: str
    agent: str
    purpose: str
    digest: str


class ModelCallStarted(RecordBase):
    """A model call about to be sent (written at the barrier right before it): a start with no
    finish is a call that was in flight when its process died."""

    kind: Literal["model_call_started"] = "model_call_started"
    key: ModelKey


class ModelCallFailed(RecordBase):
    """A model call whose model raised (an error, a timeout) after it was started: not in
    flight any more, and not settled (a resumed run neither replays it nor counts it repaid)."""

    kind: Literal["model_call_failed"] = "model_call_failed"
    key: ModelKey
    error: str = ""
    """The kind of error (its class name)."""


class ModelCallFinished(RecordBase):
    """A model call that was answered and settled: a resumed run replays it at 0 tokens."""

    kind: Literal["model_call_finished"] = "model_call_finished"
    key: ModelKey
    text: str | None = None
    tool_calls: list[ToolCall] = []
    usage: Annotated[Usage, AfterValidator(_counted)] = Usage()
    cost: Dollars = 0.0
    finish_reason: Literal["stop", "tool_calls", "length", "content_filter", "error"] = "stop"
    model: str | None = None
    output_mode: str | None = None
    session: str = ""
    """The session that made the call ("" where none did), and the call's `step` there: where
    a transcript shows the words of an answer that also called tools."""
    step: NonNegativeInt = 0


AgentCallRecord = CallStarted | CallFinished
"""The records of an agent call (or a session turn)."""
ModelCallRecord = ModelCallStarted | ModelCallFailed | ModelCallFinished
"""The records of one model call."""
JournalRecord = Annotated[
    JournalOpened | AgentCallRecord | ModelCallRecord, Field(discriminator="kind")
]

_ADAPTER: TypeAdapter[JournalRecord] | None = None
_KINDS: dict[type[RecordBase], str] = {}


def record_adapter() -> TypeAdapter[JournalRecord]:
    """The union's validator, built on first use to keep import cheap."""
    global _ADAPTER
    if _ADAPTER is None:
        _ADAPTER = TypeAdapter(JournalRecord)
    return _ADAPTER


def kind_of(cls: type[RecordBase]) -> str:
    """The `kind` tag of a record class."""
    kind = _KINDS.get(cls)
    if kind is None:
        kind = _KINDS[cls] = str(cls.model_fields["kind"].default)
    return kind


def parse_record(line: str | bytes) -> RecordBase:
    """Parse one journal line into its record (raises `ValidationError`, a `ValueError`).

    A line that holds a lone surrogate (`record.jsonline` escapes text that is not UTF-8 so)
    is read with Python's JSON parser: pydantic's refuses such an escape.
    """
    try:
        record: RecordBase = record_adapter().validate_json(line)
    except ValidationError as exc:
        if exc.errors()[0]["type"] != "json_invalid":
            raise
        record = record_adapter().validate_python(json.loads(line))
    return record
