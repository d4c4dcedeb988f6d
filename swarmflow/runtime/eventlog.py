"""The run's one ordered event stream: sequence numbers, secret scrubbing, fan-out, waiting."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from pydantic_core import to_json

from swarmflow.core.events import EventBase
from swarmflow.core.ports import EventSink

E = TypeVar("E", bound=EventBase)
Predicate = Callable[[EventBase], bool]

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|AUTH", re.IGNORECASE)
_MIN_SECRET = 8
REDACTED = b"[redacted]"
VALIDATE_ENV = "SWARMFLOW_VALIDATE_EVENTS"
_ALL = "*"


@dataclass(slots=True)
class AgentUsage:
    """One agent's spend in a run."""

    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    cost: float = 0.0

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out


@dataclass(frozen=True, slots=True)
class _Shape:
    type: str
    envelope: dict[str, Any]
    tallied: bool


_SHAPES: dict[type, _Shape] = {}


def _shape(cls: type[EventBase]) -> _Shape:
    """The type tag and the default fields of an event class, computed once per class."""
    shape = _SHAPES.get(cls)
    if shape is None:
        fields = cls.model_fields
        envelope = {"agent": None, "session": None, "branch": "", "type": fields["type"].default}
        for name, info in fields.items():
            if name not in envelope and name not in _STAMPED and not info.is_required():
                envelope[name] = info.get_default(call_default_factory=True)
        kind = envelope["type"]
        shape = _SHAPES[cls] = _Shape(kind, envelope, tallied=kind == "model_called")
    return shape


_STAMPED = frozenset({"run_id", "seq", "ts", "t"})


def _wanted_types(sinks: list[EventSink]) -> frozenset[str]:
    """Event types that some sink wants as objects; `*` stands for all."""
    wanted: set[str] = set()
    for sink in sinks:
        if not getattr(sink, "wants_objects", True):
            continue
        types = getattr(sink, "event_types", None)
        wanted.update(types if types is not None else {_ALL})
    if _ALL in wanted:
        return frozenset(_everything())
    return frozenset(wanted)


def _everything() -> set[str]:
    from swarmflow.core import events

    return {
        cls.model_fields["type"].default
        for cls in vars(events).values()
        if isinstance(cls, type) and issubclass(cls, EventBase) and "type" in cls.model_fields
    }


def environment_secrets(extra: Iterable[str] = ()) -> list[str]:
    """Values of environment variables whose names look secret, plus `extra`."""
    values = [v for k, v in os.environ.items() if _SECRET_NAME.search(k)]
    values.extend(extra)
    return sorted({v for v in values if v and len(v) >= _MIN_SECRET}, key=len, reverse=True)


class EventLog:
    """Assigns contiguous sequence numbers and hands each event to every sink."""

    def __init__(
        self,
        run_id: str,
        sinks: Iterable[EventSink],
        *,
        secrets: Iterable[str] = (),
        clock: Callable[[], float] = time.perf_counter,
        start_seq: int = 0,
    ) -> None:
        """`start_seq`: a resumed run goes on numbering where its log stopped."""
        self.run_id = run_id
        self.sinks = list(sinks)
        self._clock = clock
        self._t0 = clock()
        self._seq = start_seq
        self._waiters: list[tuple[Predicate, anyio.Event, list[EventBase]]] = []
        self._history: list[EventBase] | None = None
        self._wall0 = time.time()
        self.usage: dict[str, AgentUsage] = {}
        """Model calls and spend per agent, added up as `model_called` events are recorded."""
        self._validate = os.environ.get(VALIDATE_ENV) == "1"
        self._wanted = _wanted_types(self.sinks)
        self._update_objects()
        # JSON escapes some characters; look for each secret both raw and as JSON would show it.
        forms = {form for s in secrets for form in (s, json.dumps(s)[1:-1])}
        words = [re.escape(f.encode()) for f in sorted(forms, key=len, reverse=True)]
        self._secret_re = re.compile(b"|".join(words)) if words else None

    def _update_objects(self) -> None:
        """Whether every event needs its model: validation on, history kept, or waiters."""
        self._all_objects = self._validate or self._history is not None or bool(self._waiters)

    @property
    def count(self) -> int:
        return self._seq

    def keep_history(self) -> None:
        """Keep events in memory so `wait_for` can match events already emitted."""
        if self._history is None:
            self._history = []
            self._update_objects()

    def emit(self, cls: type[E], **fields: Any) -> E | None:
        """Number, serialise, scrub and record one event (see `record`)."""
        return self.record(cls, fields)

    def record(self, cls: type[E], fields: dict[str, Any]) -> E | None:
        """Number, serialise, scrub and record one event from a dict of its fields.

        The JSON line is built straight from the fields; the pydantic model is built only for
        sinks that want objects (memory, usage tally, waiters), or always when
        `SWARMFLOW_VALIDATE_EVENTS=1` (the test suite sets it to check every line).
        """
        shape = _SHAPES.get(cls) or _shape(cls)
        t = self._clock() - self._t0
        seq = self._seq
        self._seq = seq + 1
        data = {"run_id": self.run_id, "seq": seq, "ts": self._wall0 + t, "t": t,
                **shape.envelope, **fields}  # fmt: skip
        if shape.tallied:
            self._tally(data)
        line = to_json(data, fallback=str)
        if self._secret_re is not None and self._secret_re.search(line):
            line = self._secret_re.sub(REDACTED, line)
            data = json.loads(line)
        event: E | None = None
        if self._all_objects or shape.type in self._wanted:
            event = cls.model_validate(data)
        for sink in self.sinks:
            sink.write(event, line)
        if event is not None:
            if self._history is not None:
                self._history.append(event)
            if self._waiters:
                self._wake(event)
        return event

    def _tally(self, data: dict[str, Any]) -> None:
        usage = self.usage.get(data["agent"] or "?")
        if usage is None:
            usage = self.usage[data["agent"] or "?"] = AgentUsage()
        usage.calls += 1
        usage.tokens_in += data["tokens_in"]
        usage.tokens_out += data["tokens_out"]
        usage.tokens_cached += data["tokens_cached"]
        usage.cost += data["cost"]

    def _wake(self, event: EventBase) -> None:
        keep = []
        for pred, flag, slot in self._waiters:
            if pred(event):
                slot.append(event)
                flag.set()
            else:
                keep.append((pred, flag, slot))
        self._waiters = keep
        self._update_objects()

    async def wait_for(self, predicate: Predicate) -> EventBase:
        """Wait until an event matching `predicate` is emitted (or was, with history kept)."""
        for event in self._history or ():
            if predicate(event):
                return event
        flag, slot = anyio.Event(), []  # type: ignore[var-annotated]
        self._waiters.append((predicate, flag, slot))
        self._update_objects()
        await flag.wait()
        return slot[0]  # type: ignore[no-any-return]

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()
