"""Flows: coroutines that declare their team and budget, and nest as sub-flows."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Generic, ParamSpec, TypeVar

from swarmflow.core.budget import Limits
from swarmflow.core.errors import ConfigError
from swarmflow.core.ids import child_branch
from swarmflow.core.team import Team
from swarmflow.record.events import OperatorFinished, OperatorStarted
from swarmflow.runtime.context import RunContext, Scope, current_scope, maybe_run, running, scoped

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)  # a Flow[..., object] takes any flow


class Flow(Generic[P, R_co]):
    """A flow: a coroutine function plus its team and budget."""

    def __init__(
        self,
        fn: Callable[P, Awaitable[R_co]],
        *,
        team: Team | None = None,
        budget: Limits | dict[str, float] | None = None,
        name: str | None = None,
        card_path: tuple[str, ...] | None = None,
    ) -> None:
        if not inspect.iscoroutinefunction(fn):
            raise ConfigError(f"@flow needs an async function, got {fn!r}")
        self.fn = fn
        self.team = team or Team()
        self.limits = Limits.coerce(budget)
        self.name = name or fn.__name__
        self.card_path = card_path or _default_card_path(fn)
        functools.update_wrapper(self, fn)

    @functools.cached_property
    def signature(self) -> inspect.Signature:
        """The flow function's signature (computed once: every run checks its inputs)."""
        return inspect.signature(self.fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Awaitable[R_co]:
        """Inside a run, awaiting a flow runs it as a sub-flow under the caller's branch."""
        if maybe_run() is None:
            raise ConfigError(
                f"flow {self.name!r} must be started with swarmflow.run() or run_sync(), "
                "or awaited inside another flow"
            )
        return self._subflow(*args, **kwargs)

    async def _subflow(self, *args: Any, **kwargs: Any) -> R_co:
        run = maybe_run()
        assert run is not None
        parent = current_scope()
        # Numbered per run and parent branch: a resumed run must give it the same path.
        branch = child_branch(
            parent.branch, f"flow:{self.name}", run.state.next_subflow(parent.branch)
        )
        node = run.state.graph.open("flow", branch, parent.node, self.name)
        scope = Scope(branch, parent.ledger.child(branch, self.limits), node)
        inner = (
            run
            if self.team is run.deps.team or not self.team.agents
            else RunContext(dataclasses.replace(run.deps, team=self.team), run.state)
        )
        run.deps.log.emit(
            OperatorStarted,
            branch=branch,
            operator="flow",
            node=str(node),
            detail={"flow": self.name},
        )
        status = "failed"
        try:
            with running(inner, scope) if inner is not run else scoped(scope):
                result = await self.fn(*args, **kwargs)
            status = "ok"
            return result
        finally:
            run.state.graph.close(node, status)
            run.deps.log.emit(
                OperatorFinished, branch=branch, operator="flow", node=str(node), status=status
            )


def _default_card_path(fn: Callable[..., Any]) -> tuple[str, ...]:
    try:
        source = inspect.getsourcefile(fn)
    except TypeError:
        source = None
    here = str(Path(source).resolve().parent) if source else "."
    return (here, ".")


def flow(
    fn: Callable[P, Awaitable[R]] | None = None,
    *,
    team: Team | None = None,
    budget: Limits | dict[str, float] | None = None,
    name: str | None = None,
) -> Any:
    """Declare a flow: `@flow(team=..., budget={...}) async def f(task: str) -> T`."""
    if fn is not None:
        return Flow(fn, team=team, budget=budget, name=name)

    def wrap(inner: Callable[P, Awaitable[R]]) -> Flow[P, R]:
        return Flow(inner, team=team, budget=budget, name=name)

    return wrap
