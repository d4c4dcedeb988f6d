"""Context processors, registered by name and ordered as rails are: descending priority,
equal priorities in registration order. A policy names the ones an agent may use.

A processor is an async function `(history, pressure) -> Reduction | None`: it returns the
history it made (never editing the one given) and a line saying what it removed, or None
when it has nothing to do. It must keep a tool result after the call that asked for it.
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from swarmflow.core.errors import ConfigError
from swarmflow.core.messages import Message, Usage

if TYPE_CHECKING:
    from swarmflow.context.surroundings import Pressure


@dataclass(frozen=True, slots=True)
class Reduction:
    """What one processor made of the history."""

    history: list[Message]
    removed: str
    """One line for the event: what went, and where it can be found again, if anywhere."""
    cost: float = 0.0
    """What the processor's own model calls were charged (a summary's)."""
    usage: Usage = Usage()
    """Tokens those calls used."""


Processor = Callable[[list[Message], "Pressure"], Awaitable[Reduction | None]]


@dataclass(frozen=True, slots=True)
class Registered:
    name: str
    priority: int
    run: Processor
    order: int


class ProcessorRegistry:
    """The processors a run can name, in firing order."""

    def __init__(self) -> None:
        self._by_name: dict[str, Registered] = {}

    def register(self, name: str, fn: Processor, *, priority: int = 0) -> None:
        """Add `fn` as level `name`; a name registered again replaces the earlier one."""
        if not name.isidentifier():
            raise ConfigError(f"context processor name {name!r} must be an identifier")
        order = len(self._by_name)
        self._by_name[name] = Registered(name, priority, fn, order)

    def names(self) -> list[str]:
        return [r.name for r in self._sorted(self._by_name.values())]

    def ordered(self, names: Sequence[str], *, agent: str = "") -> list[Registered]:
        """The processors called `names`, in firing order; an unknown name is a ConfigError
        naming the closest registered one."""
        found = []
        for name in dict.fromkeys(names):
            registered = self._by_name.get(name)
            if registered is None:
                close = difflib.get_close_matches(name, list(self._by_name), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                who = f"agent {agent!r}: " if agent else ""
                raise ConfigError(
                    f"{who}unknown context processor {name!r}{hint}; registered: "
                    f"{', '.join(self.names())}",
                    agent=agent or None,
                )
            found.append(registered)
        return self._sorted(found)

    @staticmethod
    def _sorted(items: Iterable[Registered]) -> list[Registered]:
        return sorted(items, key=lambda r: (-r.priority, r.order))


PROCESSORS = ProcessorRegistry()
"""The processors every run can name: the built-ins (`swarmflow.context.builtin`) and yours."""


def context_processor(name: str, *, priority: int = 0) -> Callable[[Processor], Processor]:
    """Register the decorated async function as context level `name` (docs/context.md)."""

    def register(fn: Processor) -> Processor:
        PROCESSORS.register(name, fn, priority=priority)
        return fn

    return register
