"""`run` and `run_sync`: wire the adapters to the runtime and execute one flow.

One run = one team, one budget ledger, one event stream, one run directory (`runs/<run_id>/`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from swarmflow.core.budget import Ledger, Limits
from swarmflow.core.errors import BudgetExhausted, ConfigError, RunPaused, SwarmflowError
from swarmflow.core.events import EventBase, ModelRetried, RunFinished, RunStarted
from swarmflow.core.ids import new_run_id
from swarmflow.core.messages import Model
from swarmflow.core.pricing import Price, PriceTable
from swarmflow.core.states import EndReason
from swarmflow.core.team import Agent, agent_invoker
from swarmflow.runtime.calls import call_agent
from swarmflow.runtime.context import RunContext, Scope, current_session, running
from swarmflow.runtime.eventlog import AgentUsage, EventLog, environment_secrets
from swarmflow.runtime.flow import Flow
from swarmflow.runtime.graph import RunGraph
from swarmflow.runtime.human import ConsoleHuman, NoHuman, ScriptedHuman
from swarmflow.runtime.ports import EventSink, HumanChannel
from swarmflow.runtime.rails import Rail, Rails
from swarmflow.sinks import JsonlSink, MemorySink, read_events
from swarmflow.testing import check_real_call_allowed

DEFAULT_RUNS_ROOT = "runs"
RUNS_ENV = "SWARMFLOW_RUNS"
"""Environment variable naming the folder that holds run directories (default `runs`)."""


@dataclass
class RunGraphs:
    """The declared topology and the executed graph of a run."""

    topology: Any
    executed: RunGraph

    def mermaid(self) -> str:
        return f"{self.topology.mermaid()}\n\n{self.executed.mermaid()}"


@dataclass
class RunResult:
    """What a run produced and how it went."""

    output: Any
    status: str
    run_id: str
    run_dir: Path
    usage: dict[str, AgentUsage]
    graph: RunGraphs
    error: BaseException | None = None
    wall: float = 0.0
    pause_token: str | None = None
    _memory: MemorySink | None = field(default=None, repr=False)

    @property
    def events_path(self) -> Path:
        return self.run_dir / "events.jsonl"

    @property
    def events(self) -> list[EventBase]:
        """Every event, from memory when kept, else read back from the JSONL log."""
        if self._memory is not None:
            return list(self._memory.events)
        return list(read_events(self.events_path))

    @property
    def tokens(self) -> int:
        return sum(u.tokens for u in self.usage.values())

    @property
    def cost(self) -> float:
        return sum(u.cost for u in self.usage.values())

    def raise_for_status(self) -> RunResult:
        """Re-raise the flow's error, if it failed."""
        if self.error is not None:
            raise self.error
        return self


ModelSpec = Model | str | Callable[[Agent], Model] | None


async def run(
    flow: Flow[..., Any],
    /,
    *,
    model: ModelSpec = None,
    budget: Limits | dict[str, float] | None = None,
    human: HumanChannel | Sequence[Any] | Mapping[str, Any] | None = None,
    events: str | Iterable[EventSink] | None = None,
    sinks: Iterable[EventSink] = (),
    run_id: str | None = None,
    repo: str | Path | None = None,
    runs_root: str | Path | None = None,
    tools: Any = None,
    rails: Iterable[Rail] = (),
    prices: Mapping[str, Price | Mapping[str, float]] | None = None,
    goals: Mapping[str, Sequence[Any]] | None = None,
    keep_workspaces: bool = False,
    context_tokens: int | None = None,
    **inputs: Any,
) -> RunResult:
    """Execute `flow` with `inputs`; returns a `RunResult` whatever the flow's fate.

    `events` picks the built-in sinks ("both", "jsonl", "memory", or your own list); `sinks`
    adds more beside them (a progress display, say). `run_id` names the run directory.
    """
    if not isinstance(flow, Flow):
        raise ConfigError(f"run() needs a @flow, got {flow!r}")
    _check_inputs(flow, inputs)
    run_id = run_id or new_run_id()
    root = Path(runs_root or os.environ.get(RUNS_ENV) or DEFAULT_RUNS_ROOT)
    run_dir = (root / run_id).resolve()  # worktrees and tools must not depend on the cwd
    run_dir.mkdir(parents=True, exist_ok=True)
    memory, chosen = _sinks(events, run_dir)
    sinks = [*chosen, *sinks]
    log = EventLog(run_id, sinks, secrets=environment_secrets(_model_keys(model)))
    limits = _merge_limits(flow.limits, Limits.coerce(budget))
    resolver = _ModelResolver(model)
    ctx = RunContext(
        run_id=run_id,
        run_dir=run_dir,
        team=flow.team,
        log=log,
        ledger=Ledger("run", limits),
        model_for=resolver,
        tools=tools or _default_tools(),
        human=_human_channel(human),
        workspaces=_workspaces(flow, run_dir, repo),
        prices=PriceTable(prices),
        rails=Rails(rails),
        card_path=flow.card_path,
        keep_workspaces=keep_workspaces,
        goals={k: tuple(v) for k, v in (goals or {}).items()},
        context_tokens=context_tokens,
    )
    return await _execute(ctx, flow, inputs, memory)


async def _execute(
    ctx: RunContext,
    flow: Flow[..., Any],
    inputs: dict[str, Any],
    memory: MemorySink | None,
) -> RunResult:
    log = ctx.log
    log.emit(
        RunStarted,
        flow=flow.name,
        inputs=_jsonable(inputs),
        limits=_limits(ctx.ledger),
        agents=flow.team.names,
        edges=[list(e) for e in flow.team.edges],
        roles=_roles(flow),
    )
    output: Any = None
    status, token = "ok", None
    error: BaseException | None = None
    invoker = agent_invoker.set(call_agent)
    try:
        async with anyio.create_task_group() as nursery:
            ctx.nursery = nursery
            try:
                with running(ctx, Scope("", ctx.ledger)):
                    output = await _within_wall_clock(ctx, flow, inputs)
            except RunPaused as paused:
                status, error, token = "paused", paused, paused.token
            except anyio.get_cancelled_exc_class():
                status = "cancelled"
                with anyio.CancelScope(shield=True):
                    await _close(ctx, log, status, None)
                raise
            except Exception as exc:
                status, error = "failed", exc
            finally:
                # Work the flow abandoned (an unclosed stream, say) ends with the flow.
                nursery.cancel_scope.cancel()
    finally:
        agent_invoker.reset(invoker)
    status, error = await _close(ctx, log, status, error)
    return RunResult(
        output=output,
        status=status,
        run_id=ctx.run_id,
        run_dir=ctx.run_dir,
        usage=log.usage,
        graph=RunGraphs(flow.team, ctx.graph),
        error=error,
        wall=ctx.ledger.elapsed(),
        pause_token=token,
        _memory=memory,
    )


async def _within_wall_clock(ctx: RunContext, flow: Flow[..., Any], inputs: dict[str, Any]) -> Any:
    seconds = ctx.ledger.limits.seconds
    if seconds is None:
        return await flow.fn(**inputs)
    try:
        with anyio.fail_after(seconds):
            return await flow.fn(**inputs)
    except TimeoutError:
        raise BudgetExhausted(
            f"run exceeded its wall-clock limit of {seconds}s", reason=EndReason.WALL_CLOCK.value
        ) from None


async def _close(
    ctx: RunContext, log: EventLog, status: str, error: BaseException | None
) -> tuple[str, BaseException | None]:
    """End every session, release workspaces and clients, record the run's end."""
    for session in list(ctx.sessions):
        session.close()
    for closer in ctx.on_close:
        closer()
    try:
        if ctx.workspaces is not None:
            await ctx.workspaces.close(keep=ctx.keep_workspaces)
    except SwarmflowError as exc:  # the run's work is done; say what could not be cleaned up
        status, error = "failed", error or exc
    await _close_models(ctx)
    ledger = ctx.ledger
    log.emit(
        RunFinished,
        status=status,
        error=None if error is None else f"{type(error).__name__}: {error}",
        tokens=ledger.spent_tokens,
        cost=ledger.spent_cost,
        calls=ledger.spent_calls,
        seconds=ledger.elapsed(),
        graph=ctx.graph.mermaid(),
    )
    log.close()
    return status, error


async def _close_models(ctx: RunContext) -> None:
    closer = getattr(ctx.model_for, "aclose", None)
    if closer is not None:
        await closer()


def run_sync(flow: Flow[..., Any], /, **kwargs: Any) -> RunResult:
    """`run` for scripts: starts an event loop and blocks until the run ends."""
    result: RunResult = anyio.run(_run_kwargs, flow, kwargs)
    return result


async def _run_kwargs(flow: Flow[..., Any], kwargs: dict[str, Any]) -> RunResult:
    return await run(flow, **kwargs)


# -- wiring -----------------------------------------------------------------------------------


def _check_inputs(flow: Flow[..., Any], inputs: dict[str, Any]) -> None:
    try:
        flow.signature.bind(**inputs)
    except TypeError as exc:
        params = flow.signature.parameters
        unknown = sorted(set(inputs) - set(params))
        hint = f"; unknown inputs {unknown}" if unknown else ""
        raise ConfigError(
            f"inputs do not fit flow {flow.name}{flow.signature}: {exc}{hint}"
        ) from None


def _sinks(
    events: str | Iterable[EventSink] | None, run_dir: Path
) -> tuple[MemorySink | None, list[EventSink]]:
    path = run_dir / "events.jsonl"
    if events is None or events == "both":
        memory = MemorySink()
        return memory, [memory, JsonlSink(path)]
    if events == "jsonl":
        return None, [JsonlSink(path)]
    if events == "memory":
        memory = MemorySink()
        return memory, [memory]
    if isinstance(events, str):
        raise ConfigError(f"events={events!r}; use 'both', 'jsonl', 'memory' or a list of sinks")
    given = list(events)
    found = next((s for s in given if isinstance(s, MemorySink)), None)
    return found, given


def _model_keys(model: ModelSpec) -> list[str]:
    secrets = getattr(model, "secrets", None)
    return list(secrets()) if callable(secrets) else []


def _report_retry(attempt: int, error: str, delay: float) -> None:
    """Turn an adapter's retry into a `model_retried` event of the session that waits."""
    session = current_session.get()
    if session is not None and not session.closed:
        session.emit(ModelRetried, attempt=attempt, error=error, delay=delay)


def _instrument(model: Model) -> Model:
    if hasattr(model, "on_retry") and model.on_retry is None:
        model.on_retry = _report_retry
    return model


class _ModelResolver:
    """Finds each agent's model once per run, and closes the clients it built itself."""

    def __init__(self, model: ModelSpec) -> None:
        self.default = model
        self.built: dict[str, Model] = {}
        self.per_agent: dict[int, Model] = {}  # by declaration: sub-flow teams may reuse names

    def __call__(self, agent: Agent) -> Model:
        known = self.per_agent.get(id(agent))
        if known is None:
            known = self.per_agent[id(agent)] = self._resolve(agent)
        return known

    def _resolve(self, agent: Agent) -> Model:
        chosen = agent.model if agent.model is not None else self.default
        if chosen is None:
            raise ConfigError(
                f"agent {agent.name!r} has no model; pass model= to run()", agent=agent.name
            )
        if callable(chosen) and not hasattr(chosen, "complete"):
            chosen = chosen(agent)
        if isinstance(chosen, str):
            if chosen not in self.built:
                self.built[chosen] = _openai_model(chosen)
            chosen = self.built[chosen]
        check_real_call_allowed(chosen)
        return _instrument(chosen)  # type: ignore[arg-type]

    async def aclose(self) -> None:
        for model in self.built.values():
            close = getattr(model, "aclose", None)
            if close is not None:
                await close()


def _openai_model(name: str) -> Model:
    from swarmflow.models import OpenAIModel

    return OpenAIModel(name)


def _default_tools() -> Any:
    from swarmflow.tools import default_registry

    return default_registry()


def _workspaces(flow: Flow[..., Any], run_dir: Path, repo: str | Path | None) -> Any:
    if all(a.workspace == "none" for a in flow.team.agents):
        return None
    from swarmflow.workspaces import DefaultWorkspaces

    return DefaultWorkspaces(run_dir, Path(repo).resolve() if repo else None)


def _human_channel(human: HumanChannel | Sequence[Any] | Mapping[str, Any] | None) -> HumanChannel:
    if human is None:
        return ConsoleHuman() if sys.stdin.isatty() and not os.environ.get("CI") else NoHuman()
    if hasattr(human, "ask"):
        return human  # type: ignore[return-value]
    return ScriptedHuman(human)


def _merge_limits(declared: Limits, given: Limits) -> Limits:
    return Limits(
        tokens=given.tokens if given.tokens is not None else declared.tokens,
        cost=given.cost if given.cost is not None else declared.cost,
        calls=given.calls if given.calls is not None else declared.calls,
        seconds=given.seconds if given.seconds is not None else declared.seconds,
    )


def _roles(flow: Flow[..., Any]) -> dict[str, dict[str, Any]]:
    return {
        a.name: {
            "tools": list(a.tools),
            "allowance": a.allowance,
            "workspace": a.workspace,
            "max_steps": a.max_steps,
        }
        for a in flow.team.agents
    }


def _limits(ledger: Ledger) -> dict[str, float | int | None]:
    lim = ledger.limits
    return {"tokens": lim.tokens, "cost": lim.cost, "calls": lim.calls, "seconds": lim.seconds}


def _jsonable(inputs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in inputs.items():
        out[key] = (
            value if isinstance(value, str | int | float | bool | type(None)) else repr(value)
        )
    return out
