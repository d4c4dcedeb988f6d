"""Rails: capabilities attached to session lifecycle hooks, with priority and visibility.

A rail's handler receives a `RailContext` and may return `Veto(reason)` to stop what is about
to happen, `Amend(value)` to replace the hook's payload, or None to only observe. Rails run in
descending priority; equal priorities keep registration order; the first veto ends the hook.

What a veto and an amend do at each hook (every veto is also recorded as `rail_vetoed`):

- `turn_start`, payload the user message (str). Amend replaces the message. Veto: the turn
  does not run; nothing is sent and the session stops with reason "vetoed by a rail".
- `before_model_call`, payload the `ModelRequest`. Amend: the amended request is sent. Veto:
  nothing is sent, the reservation is released, the session stops "vetoed by a rail".
- `after_model_call`, payload the `ModelResponse`. Amend: the session acts on the amended
  response. Veto: the session stops "vetoed by a rail" without acting on the response.
- `before_tool_call`, payload the tool's parsed arguments. Amend replaces them (validated
  against the tool's schema). Veto: the tool does not run; `tool_refused` is recorded and the
  model is told why.
- `after_tool_call`, payload the `ToolResult`. Amend: the model sees the amended result.
  Veto: the model is told the result was withheld; a vetoed `submit` is not accepted.
- `on_error`, payload the exception. Amend replaces the error the caller sees. Veto: only
  recorded; the fault stands (the session has already ended in error).
- `turn_end`, payload the answer (str). Amend replaces the answer. Veto withholds it (the
  answer is empty); a turn that had finished normally stops "vetoed by a rail" instead.

After a model call the spend is always settled and `model_called` recorded before the
after-call rails run, whatever they decide.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from pydantic import BaseModel

from swarmflow.core.errors import RailError
from swarmflow.core.messages import ModelRequest, ModelResponse
from swarmflow.core.ports import ToolResult


class Hook(StrEnum):
    """The lifecycle points a rail can attach to."""

    TURN_START = "turn_start"
    BEFORE_MODEL_CALL = "before_model_call"
    AFTER_MODEL_CALL = "after_model_call"
    BEFORE_TOOL_CALL = "before_tool_call"
    AFTER_TOOL_CALL = "after_tool_call"
    ON_ERROR = "on_error"
    TURN_END = "turn_end"


AMENDS: dict[Hook, type | tuple[type, ...]] = {
    Hook.TURN_START: str,
    Hook.BEFORE_MODEL_CALL: ModelRequest,
    Hook.AFTER_MODEL_CALL: ModelResponse,
    Hook.BEFORE_TOOL_CALL: (BaseModel, dict),
    Hook.AFTER_TOOL_CALL: ToolResult,
    Hook.ON_ERROR: Exception,
    Hook.TURN_END: str,
}
"""What an `Amend` at each hook must hold; anything else is a `RailError`."""


@dataclass(frozen=True, slots=True)
class Veto:
    """Stop what is about to happen (the module docstring says what, hook by hook)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Amend:
    """Replace the hook's payload; the value must have the type `AMENDS` gives for the hook."""

    value: Any


class Verdict(NamedTuple):
    """What the rails at one hook decided: the payload as amended, and any veto.

    A named tuple: a turn makes four, one at each hook, even with no rails, and a tuple is
    made in half the time of a frozen dataclass."""

    payload: Any
    veto: Veto | None = None
    rail: str = ""
    """The name of the vetoing rail."""


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

    async def run(self, ctx: RailContext) -> Verdict:
        """Run the visible rails in order; the first veto stops the rest.

        Raises:
            RailError: a rail answered something other than Veto, Amend or None, or amended
                the payload with a value of the wrong type for the hook.
        """
        for r in self.for_hook(ctx.hook, ctx.agent):
            decision = r.handler(ctx)
            if inspect.isawaitable(decision):
                decision = await decision
            if isinstance(decision, Veto):
                return Verdict(ctx.payload, decision, r.name)
            if isinstance(decision, Amend):
                ctx.payload = _checked_amend(r, ctx.hook, decision.value)
            elif decision is not None:
                raise RailError(
                    f"rail {r.name!r} at {ctx.hook.value} returned {type(decision).__name__}; "
                    "expected Veto, Amend or None"
                )
        return Verdict(ctx.payload)


def _checked_amend(r: Rail, hook: Hook, value: Any) -> Any:
    expected = AMENDS[hook]
    if not isinstance(value, expected):
        names = " or ".join(
            t.__name__ for t in (expected if isinstance(expected, tuple) else (expected,))
        )
        raise RailError(
            f"rail {r.name!r} amended {hook.value} with a {type(value).__name__}; expected {names}"
        )
    return value
