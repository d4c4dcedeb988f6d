"""The run's one ordered event stream: sequence numbers, secret scrubbing, fan-out, waiting."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import anyio

from swarmflow.core.events import EventBase
from swarmflow.runtime.ports import EventSink

E = TypeVar("E", bound=EventBase)
Predicate = Callable[[EventBase], bool]

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|AUTH", re.IGNORECASE)
_MIN_SECRET = 8
REDACTED = "[redacted]"


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
    ) -> None:
        self.run_id = run_id
        self.sinks = list(sinks)
        self._clock = clock
        self._t0 = clock()
        self._seq = 0
        self._waiters: list[tuple[Predicate, anyio.Event, list[EventBase]]] = []
        self._history: list[EventBase] | None = None
        words = [re.escape(s) for s in secrets]
        self._secret_re = re.compile("|".join(words)) if words else None

    @property
    def count(self) -> int:
        return self._seq

    def keep_history(self) -> None:
        """Keep events in memory so `wait_for` can match events already emitted."""
        if self._history is None:
            self._history = []

    def emit(self, cls: type[E], **fields: Any) -> E:
        """Build, scrub, number and record one event."""
        now = self._clock()
        event = cls(run_id=self.run_id, seq=self._seq, ts=time.time(), t=now - self._t0, **fields)
        self._seq += 1
        line = event.model_dump_json()
        if self._secret_re is not None and self._secret_re.search(line):
            line = self._secret_re.sub(REDACTED, line)
            event = cls.model_validate_json(line)
        for sink in self.sinks:
            sink.write(event, line)
        if self._history is not None:
            self._history.append(event)
        if self._waiters:
            self._wake(event)
        return event

    def _wake(self, event: EventBase) -> None:
        keep = []
        for pred, flag, slot in self._waiters:
            if pred(event):
                slot.append(event)
                flag.set()
            else:
                keep.append((pred, flag, slot))
        self._waiters = keep

    async def wait_for(self, predicate: Predicate) -> EventBase:
        """Wait until an event matching `predicate` is emitted (or was, with history kept)."""
        for event in self._history or ():
            if predicate(event):
                return event
        flag, slot = anyio.Event(), []  # type: ignore[var-annotated]
        self._waiters.append((predicate, flag, slot))
        await flag.wait()
        return slot[0]  # type: ignore[no-any-return]

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()
