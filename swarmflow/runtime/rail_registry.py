"""Rails: capabilities attached to session lifecycle hooks, with priority and visibility.

A rail's handler receives a `RailContext` and may return `Veto(reason)` to stop what is about
to happen, `Amend(value)` to replace the hook's payload, or None to only observe. Rails run in
descending priority; equal priorities keep registration order.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from swarmflow.core.errors import RailError


class Hook(StrEnum):
    """The lifecycle points a rail can attach to."""

    TURN_START = "turn_start"
    BEFORE_MODEL_CALL = "before_model_call"
    AFTER_MODEL_CALL = "after_model_call"
    BEFORE_TOOL_CALL = "before_tool_call"
    AFTER_TOOL_CALL = "after_tool_call"
    ON_ERROR = "on_error"
    TURN_END = "turn_end"


@dataclass(frozen=True, slots=True)
class Veto:
    """Stop the call: a vetoed model call ends the session, a vetoed tool call is skipped."""

    reason: str


@dataclass(frozen=True, slots=True)
class Amend:
    """Replace the hook's payload (request, response, tool arguments or tool result)."""

    value: Any


@dataclass(slots=True)
class RailContext:
    """What a rail sees at its hook. `payload` is what `Amend` replaces."""

    hook: Hook
    agent: str
    session: str
    step: int
    payload: Any = None
    error: BaseException | None = None
    extra: dict[str, Any] = field(default_factory=dict)


Handler = Callable[[RailContext], "Veto | Amend | None | Awaitable[Veto | Amend | None]"]


@dataclass(frozen=True, slots=True)
class Rail:
    """A handler attached to hooks. `agents=None` makes it visible to every agent."""

    name: str
    hooks: frozenset[Hook]
    handler: Handler
    priority: int = 0
    agents: frozenset[str] | None = None

    def visible_to(self, agent: str) -> bool:
        return self.agents is None or agent in self.agents


def rail(
    name: str,
    hooks: Iterable[str | Hook],
    handler: Handler,
    *,
    priority: int = 0,
    agents: Iterable[str] | None = None,
) -> Rail:
    """Build a rail, refusing hook names that do not exist."""
    return Rail(
        name=name,
        hooks=frozenset(_hook(h, name) for h in hooks),
        handler=handler,
        priority=priority,
        agents=None if agents is None else frozenset(agents),
    )


def _hook(value: str | Hook, rail_name: str) -> Hook:
    try:
        return Hook(value)
    except ValueError:
        known = ", ".join(h.value for h in Hook)
        raise RailError(
            f"rail {rail_name!r} names unknown hook {value!r}; hooks are {known}"
        ) from None


class Rails:
    """The rails of a run, indexed by hook."""

    def __init__(self, rails: Iterable[Rail] = ()) -> None:
        self._by_hook: dict[Hook, list[tuple[int, int, Rail]]] = {}
        self._count = 0
        for r in rails:
            self.register(r)

    def register(self, new: Rail) -> None:
        if not isinstance(new, Rail):
            raise RailError(f"expected a Rail, got {type(new).__name__}")
        if not new.hooks:
            raise RailError(f"rail {new.name!r} attaches to no hook")
        for hook in new.hooks:
            if not isinstance(hook, Hook):
                raise RailError(f"rail {new.name!r} names unknown hook {hook!r}")
            bucket = self._by_hook.setdefault(hook, [])
            bucket.append((-new.priority, self._count, new))
            bucket.sort(key=lambda item: (item[0], item[1]))
        self._count += 1

    def __bool__(self) -> bool:
        return bool(self._by_hook)

    def for_hook(self, hook: Hook, agent: str) -> list[Rail]:
        return [r for _, _, r in self._by_hook.get(hook, ()) if r.visible_to(agent)]

    async def run(self, ctx: RailContext) -> tuple[Any, Veto | None, str]:
        """Run the visible rails in order; returns (payload, veto, name of vetoing rail)."""
        for r in self.for_hook(ctx.hook, ctx.agent):
            decision = r.handler(ctx)
            if inspect.isawaitable(decision):
                decision = await decision
            if isinstance(decision, Veto):
                return ctx.payload, decision, r.name
            if isinstance(decision, Amend):
                ctx.payload = decision.value
        return ctx.payload, None, ""
