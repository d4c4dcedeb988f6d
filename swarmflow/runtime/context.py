"""The run context: a run's dependencies and state, and the scope (branch, ledger) of the caller.

The current run and scope live in ContextVars, so operators find them without globals and
every task started inside a branch inherits that branch's scope.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import NamedTuple

import sniffio

from swarmflow.core.bindings import bound
from swarmflow.core.budget import Ledger
from swarmflow.core.errors import ConfigError
from swarmflow.core.renders import current_renders
from swarmflow.runtime.deps import RunDeps
from swarmflow.runtime.state import OpenSession, RunState


class Scope(NamedTuple):
    """Where the caller is: its branch path, its ledger and its parent graph node.

    A named tuple, not a frozen dataclass: every branch and every agent call makes one, and a
    tuple is built in one call where a frozen dataclass sets each field through
    `object.__setattr__`.
    """

    branch: str
    ledger: Ledger
    node: int | None = None


@dataclass(frozen=True, slots=True)
class RunContext:
    """One run: what it is given (`deps`, frozen) and what it holds (`state`, mutable)."""

    deps: RunDeps
    state: RunState


_current_run: ContextVar[RunContext | None] = ContextVar("swarmflow_run", default=None)
current_session: ContextVar[OpenSession | None] = ContextVar("swarmflow_session", default=None)
"""The session whose turn the current task is running (adapters' callbacks read it)."""
_current_scope: ContextVar[Scope | None] = ContextVar("swarmflow_scope", default=None)


def current_run(operator: str = "this operator") -> RunContext:
    """The active run, or a clear error when called outside one."""
    run = _current_run.get()
    if run is None:
        raise ConfigError(f"{operator} can only be used inside a running flow (use swarmflow.run)")
    return run


def maybe_run() -> RunContext | None:
    return _current_run.get()


def current_scope() -> Scope:
    scope = _current_scope.get()
    if scope is None:
        run = current_run()
        return Scope("", run.state.ledger)
    return scope


def set_scope(scope: Scope) -> Token[Scope | None]:
    """Enter `scope`; pass the token to `reset_scope` (cheaper than the context manager)."""
    return _current_scope.set(scope)


def reset_scope(token: Token[Scope | None]) -> None:
    _current_scope.reset(token)


def enter_scope(scope: Scope) -> None:
    """Set the scope for the rest of the current task (each task has its own context copy)."""
    _current_scope.set(scope)


def scoped(scope: Scope) -> AbstractContextManager[Scope]:
    """Enter a branch scope for the duration of the block."""
    return bound(_current_scope, scope)


@contextmanager
def running(run: RunContext, scope: Scope) -> Iterator[RunContext]:
    """Make `run` the active run, on an event loop named once for all of it (`_name_loop`)."""
    token = _current_run.set(run)
    scope_token = _current_scope.set(scope)
    renders_token = current_renders.set(run.state.renders)
    loop_token = _name_loop()
    try:
        yield run
    finally:
        if loop_token is not None:
            sniffio.current_async_library_cvar.reset(loop_token)
        current_renders.reset(renders_token)
        _current_scope.reset(scope_token)
        _current_run.reset(token)


def _name_loop() -> Token[str | None] | None:
    """Say in the context which event loop runs, unless it says so already (None then).

    anyio asks which one (`sniffio.current_async_library`) at every task, cancel scope, event
    and checkpoint it makes. Under `anyio.run` the context says: anyio sets it, since it runs
    the loop. Under `asyncio.run` nothing does, and sniffio finds out anew each time, importing
    asyncio and asking it for the current task: about half a microsecond, four times in every
    branch of a fan-out. The run says it once, as `anyio.run` does, and the tasks it starts
    inherit it with the rest of its context.
    """
    if sniffio.current_async_library_cvar.get() is not None:
        return None
    try:
        name = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:  # no event loop runs (a plain function's call)
        return None
    return sniffio.current_async_library_cvar.set(name)
