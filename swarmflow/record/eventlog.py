"""The run's one ordered event stream: sequence numbers, the secret policy, fan-out to sinks.

Each event is rendered as one JSON line (`record.jsonline`, orjson), then the run's `Redactor`
(`core.secrets`, the one secret policy) scrubs the line. Every sink receives that scrubbed
line, and, when it asks for them, the event as a model built from the scrubbed fields.

No line is longer than the readers take (`record.oversized`): an event over their cap is
written cut to fit, or not written, and an `event_oversized` event says so.

A sink that writes a file holds its lines until `flush` (the JSONL sink): the run flushes
before each external effect (`RunContext.write_ahead`), so the events between two effects
share one write.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from swarmflow.core.secrets import Redactor
from swarmflow.record import oversized as oversize
from swarmflow.record.events import EventBase, EventOversized
from swarmflow.record.jsonline import json_line
from swarmflow.record.sink import EventSink

E = TypeVar("E", bound=EventBase)

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


@dataclass(frozen=True, slots=True)
class _Kind:
    """What one log needs of an event class, found with one lookup per event."""

    shape: _Shape
    template: dict[str, Any]
    """The stamps and the class's defaults, in line order, to copy."""
    objects: bool
    """Some sink wants the event as a model (or validation is on): it is built."""


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
    from swarmflow.record import events

    return {
        cls.model_fields["type"].default
        for cls in vars(events).values()
        if isinstance(cls, type) and issubclass(cls, EventBase) and "type" in cls.model_fields
    }


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
        start_t: float = 0.0,
    ) -> None:
        """`start_seq`, `start_t`: a resumed run goes on numbering, and its clock goes on,
        where its log stopped (the time between a process's death and its resume is not in
        `t`; `ts` is the wall clock)."""
        self.run_id = run_id
        self.sinks = list(sinks)
        self.redactor = Redactor(secrets)
        """The run's secret policy; sinks that print text of their own scrub it with this."""
        self._clock = clock
        self._t0 = clock()
        self._start_t = start_t
        self._seq = start_seq
        self._wall0 = time.time()
        self.usage: dict[str, AgentUsage] = {}
        """Model calls and spend per agent, added up as `model_called` events are recorded."""
        # With validation on (the test suite), every event is built as a model and checked.
        self._all_objects = os.environ.get(VALIDATE_ENV) == "1"
        self._wanted = _wanted_types(self.sinks)
        self._kinds: dict[type, _Kind] = {}
        flushes = (getattr(sink, "flush", None) for sink in self.sinks)
        self._flushes: list[Callable[[], None]] = [f for f in flushes if callable(f)]

    @property
    def count(self) -> int:
        return self._seq

    def emit(self, cls: type[E], **fields: Any) -> E | None:
        """Number, render, scrub and record one event (see `record`)."""
        return self.record(cls, fields)

    def record(self, cls: type[E], fields: dict[str, Any]) -> E | None:
        """Number, render, scrub and record one event from a dict of its fields.

        The pydantic model is built only for sinks that want objects (progress, OTel), or
        always when `SWARMFLOW_VALIDATE_EVENTS=1` (the test suite sets it to check every line).
        """
        kind = self._kinds.get(cls) or self._kind(cls)
        t = self._clock() - self._t0
        seq = self._seq
        self._seq = seq + 1
        # A copy of a ready dict and one update: the same keys in the same order as building
        # it from the stamps, the defaults and the fields, in about half the time.
        data = kind.template.copy()
        data["seq"] = seq
        data["ts"] = self._wall0 + t
        data["t"] = self._start_t + t
        data.update(fields)
        if kind.shape.tallied:
            self._tally(data)
        rendered = json_line(data)
        line = self.redactor.scrub_bytes(rendered)
        size = len(line)
        # The stand-in for an event over the cap is small, unless its envelope is not.
        oversized = size > oversize.MAX_EVENT_LINE and cls is not EventOversized
        if oversized:  # no reader would read it back: cut to fit, or left out
            fitted = oversize.cut_to_fit(line, cls, oversize.MAX_EVENT_LINE)
            if fitted is None:
                self._seq = seq  # the stand-in takes its place in the sequence
                self._mark(kind.shape.type, size, data, cut=False)
                return None
            data, line = fitted
        elif line is not rendered:  # a secret was scrubbed: the objects must not hold it
            data = json.loads(line)
        event: E | None = cls.model_validate(data) if kind.objects else None
        for sink in self.sinks:
            sink.write(event, line)
        if oversized:
            self._mark(kind.shape.type, size, data, cut=True)
        return event

    def _mark(self, kind: str, size: int, data: dict[str, Any], *, cut: bool) -> None:
        """Record the `event_oversized` event for an event of `kind` over the cap."""
        fields: dict[str, Any] = {k: data[k] for k in ("agent", "session", "branch") if k in data}
        fields.update(event=kind, size=size, cap=oversize.MAX_EVENT_LINE, cut=cut)
        self.record(EventOversized, fields)

    def _kind(self, cls: type[EventBase]) -> _Kind:
        shape = _shape(cls)
        template = {"run_id": self.run_id, "seq": 0, "ts": 0.0, "t": 0.0, **shape.envelope}
        objects = self._all_objects or shape.type in self._wanted
        kind = self._kinds[cls] = _Kind(shape, template, objects)
        return kind

    def _tally(self, data: dict[str, Any]) -> None:
        usage = self.usage.get(data["agent"] or "?")
        if usage is None:
            usage = self.usage[data["agent"] or "?"] = AgentUsage()
        usage.calls += 1
        usage.tokens_in += data["tokens_in"]
        usage.tokens_out += data["tokens_out"]
        usage.tokens_cached += data["tokens_cached"]
        usage.cost += data["cost"]

    def flush(self) -> None:
        """Have every sink that holds lines write them (one write per sink)."""
        for flush in self._flushes:
            flush()

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()


class EventsAs:
    """Records events in one envelope (agent, session, branch): `events(EventClass, **fields)`.

    A session hands this to the parts of it that record events (its caller, inbox and tool
    runner) instead of its own bound `emit`: that method holds the session, and the session
    holds those parts, a reference cycle per session that only the garbage collector frees.
    A fan-out of 10,000 one-call branches spent about a tenth of its CPU time collecting them.
    """

    __slots__ = ("_log", "envelope")

    def __init__(self, log: EventLog, agent: str, session: str, branch: str) -> None:
        self._log = log
        self.envelope = (agent, session, branch)

    def __call__(self, cls: type[EventBase], **fields: object) -> None:
        self.record(cls, fields)

    def record(self, cls: type[EventBase], fields: dict[str, object]) -> None:
        fields["agent"], fields["session"], fields["branch"] = self.envelope
        self._log.record(cls, fields)
