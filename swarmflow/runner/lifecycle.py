"""`run` and `run_sync`: execute one flow over the runtime.

One run = one team, one budget ledger, one event stream, one run directory (`runs/<run_id>/`).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec

import anyio
from pydantic_core import to_jsonable_python

from swarmflow.core.budget import Ledger, Limits
from swarmflow.core.capabilities import pinned_modes
from swarmflow.core.errors import (
    BudgetExhausted,
    ConfigError,
    FlowFailed,
    RunPaused,
    SwarmflowError,
)
from swarmflow.core.ids import new_run_id
from swarmflow.core.ports import HumanChannel
from swarmflow.core.pricing import Price, PriceTable
from swarmflow.core.secrets import secret_values
from swarmflow.core.states import EndReason
from swarmflow.durable.claims import claim, fresh_run_dir, release
from swarmflow.durable.interrupted import (
    Durability,
    Interrupted,
    check_durability,
    open_interrupted,
    open_journal,
    resumed,
    sync_sinks,
)
from swarmflow.durable.manifest import write_manifest
from swarmflow.record.eventlog import EventLog
from swarmflow.record.events import RunFinished, RunStarted
from swarmflow.record.runs_root import DEFAULT_RUNS_ROOT, RUNS_ENV, resolve_runs_root
from swarmflow.record.sink import EventSink
from swarmflow.record.sinks import MemorySink
from swarmflow.runner.failures import failure_message, located
from swarmflow.runner.result import RunGraphs, RunResult
from swarmflow.runner.wiring import (
    ModelResolver,
    ModelSpec,
    check_inputs,
    check_team,
    choose_sinks,
    default_tools,
    human_channel,
    jsonable,
    limits_of,
    merge_limits,
    model_secrets,
    record_probe,
    roles_of,
    run_deps,
    workspaces_for,
)
from swarmflow.runtime.background import BranchWork, owning
from swarmflow.runtime.context import RunContext, Scope, running
from swarmflow.runtime.flow import Flow
from swarmflow.runtime.rails import Rail, Rails
from swarmflow.runtime.state import RunState
from swarmflow.sessions.agent_tools import serving

if TYPE_CHECKING:
    from swarmflow.experience.run_notes import RunExperience

__all__ = ["DEFAULT_RUNS_ROOT", "RUNS_ENV", "RunResult", "run", "run_sync"]

P = ParamSpec("P")


async def run(
    flow: Flow[..., object],
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
    experience: str | Path | bool | None = None,
    resume: str | Path | None = None,
    strict: bool = False,
    durability: Durability = "write",
    raise_on_failure: bool = True,
    parent_ledger: Ledger | None = None,
    board_port: int | None = None,
    pin_modes: bool = False,
    **inputs: Any,
) -> RunResult:
    """Execute `flow` with `inputs` (its parameters, by name) and return its `RunResult`.

    `events` picks the built-in sinks ("both", "jsonl", "memory", or your own list); `sinks`
    adds more beside them (a progress display, say). `run_id` names the run directory.
    `resume=RUN_DIR` goes on with an interrupted run (docs/durability.md): finished calls are
    replayed from its journal; `strict=True` refuses a flow that no longer matches it.
    `durability="fsync"` also syncs every event and journal record to disk. A paused run
    returns with `status="paused"`. `parent_ledger` makes the run's ledger a child of it: every
    reservation must also fit it and every spend counts against it (a batch's shared budget).
    `board_port` serves the run's message board over HTTP on 127.0.0.1 at that port while the
    flow runs (0 picks a free one; docs/board.md). `pin_modes=True` keeps every model's
    output modes as its capabilities say: a server that rejects one fails the call instead of
    stepping down (docs/models.md). `experience=True` (the runs root's
    `experience.db`) or a file path opts in to experience across runs: each agent is offered
    the most relevant notes earlier runs wrote, and at the end a reflection writes its own
    (docs/context.md).

    Raises:
        FlowFailed: the run failed (its `RunResult` is on `.result`, the cause chained);
            with `raise_on_failure=False` the result is returned instead.
        ConfigError: the flow cannot start: an input it does not take (a misspelled option
            lands here too), a broken team.
    """
    if not isinstance(flow, Flow):
        raise ConfigError(f"run() needs a @flow, got {flow!r}")
    check_team(flow)
    check_durability(durability)
    # A mistake found while the run is set up lets go of its directory again.
    with contextlib.ExitStack() as undo:
        interrupted = open_interrupted(resume) if resume is not None else None
        if interrupted is not None:
            undo.callback(release, interrupted.run_dir)
            run_id, inputs = interrupted.run_id, inputs or interrupted.inputs()
            repo = repo or interrupted.manifest.get("repo")
        check_inputs(flow, inputs, options=RUN_OPTIONS)
        # Options that can be wrong are read before the run directory exists: a mistake in one
        # leaves no dead run behind.
        limits = merge_limits(flow.limits, Limits.coerce(budget))
        price_table, rail_set, channel = PriceTable(prices), Rails(rails), human_channel(human)
        goal_map = {k: tuple(v) for k, v in (goals or {}).items()}
        run_id = run_id or new_run_id()
        # Worktrees and tools must not depend on the cwd; a fresh run never joins another's record.
        root = resolve_runs_root(runs_root)
        notes = _experience(experience, root, run_id, repo)  # a bad store: refused here
        run_dir = interrupted.run_dir if interrupted else fresh_run_dir(root, run_id)
        undo.callback(release, run_dir)
        memory, chosen = choose_sinks(events, run_dir)
        log = EventLog(
            run_id,
            sync_sinks([*chosen, *sinks], durability),
            secrets=secret_values(extra=model_secrets(model)),
            start_seq=interrupted.log.next_seq if interrupted else 0,
            start_t=interrupted.log.clock if interrupted else 0.0,
        )
        write_manifest(run_dir, flow, inputs, repo=repo, model=model)
        journal = open_journal(
            run_dir,
            run_id,
            interrupted,
            durability=durability,
            strict=strict,
            scrub=log.redactor.scrub_bytes,
        )
        deps = run_deps(
            run_id=run_id,
            run_dir=run_dir,
            team=flow.team,
            log=log,
            model_for=ModelResolver(model),
            tools=tools or default_tools(),
            human=channel,
            workspaces=workspaces_for(flow, run_dir, repo),
            prices=price_table,
            rails=rail_set,
            card_path=flow.card_path,
            keep_workspaces=keep_workspaces,
            goals=goal_map,
            context_tokens=context_tokens,
            experience=notes,
            journal=journal,
        )
        ctx = RunContext(deps, RunState(Ledger("run", limits, parent=parent_ledger)))
        claim(run_dir)  # from here on the run's end releases it
        undo.pop_all()
    with pinned_modes(pin_modes):
        result = await _execute(ctx, flow, inputs, memory, interrupted, board_port=board_port)
    if result.status == "failed" and raise_on_failure:
        raise FlowFailed(failure_message(flow.name, result.error), result=result) from result.error
    return result


RUN_OPTIONS = tuple(
    name for name in inspect.signature(run).parameters if name not in ("flow", "inputs")
)
"""The keyword options of `run` and `run_sync` (a flow input of another name is refused)."""


def _blocking(start: Callable[P, Awaitable[RunResult]]) -> Callable[P, RunResult]:
    """`start` for scripts: the same options, run in an event loop of its own."""

    @functools.wraps(start)
    def blocking(*args: P.args, **kwargs: P.kwargs) -> RunResult:
        result: RunResult = anyio.run(functools.partial(start, *args, **kwargs))
        return result

    return blocking


run_sync = _blocking(run)
run_sync.__name__ = run_sync.__qualname__ = "run_sync"
run_sync.__doc__ = """`run` for scripts: starts an event loop and blocks until the run ends.

It takes exactly `run`'s options (it forwards them), and returns or raises as `run` does.
"""


async def _execute(
    ctx: RunContext,
    flow: Flow[..., object],
    inputs: dict[str, object],
    memory: MemorySink | None,
    interrupted: Interrupted | None = None,
    *,
    board_port: int | None = None,
) -> RunResult:
    if interrupted is not None:
        resumed(ctx, flow.name, interrupted)
    else:
        ctx.deps.log.emit(
            RunStarted,
            flow=flow.name,
            inputs=jsonable(inputs),
            limits=limits_of(ctx.state.ledger),
            agents=flow.team.names,
            edges=[list(e) for e in flow.team.edges],
            roles=roles_of(flow),
        )
        record_probe(ctx.deps.log, ctx.deps.model_for)
    ctx.deps.write_ahead()  # a run directory says which run it holds from the start, even if killed
    try:
        output, status, error, token = await _attempt(ctx, flow, inputs, board_port)
    except BaseException:  # cancelled from outside (or interrupted): record it, then go on out
        with anyio.CancelScope(shield=True):
            await _close(ctx, "cancelled", None)
        raise
    status, error = await _close(ctx, status, error, output)
    return RunResult(
        output=output,
        status=status,
        run_id=ctx.deps.run_id,
        run_dir=ctx.deps.run_dir,
        usage=ctx.deps.log.usage,
        graph=RunGraphs(flow.team, ctx.state.graph),
        error=error,
        wall=ctx.state.ledger.elapsed(),
        pause_token=token,
        resumed=interrupted is not None,
        earlier_tokens=interrupted.log.spent.tokens if interrupted else 0,
        earlier_cost=interrupted.log.spent.cost if interrupted else 0.0,
        _memory=memory,
    )


Attempt = tuple[object, str, BaseException | None, str | None]


async def _attempt(
    ctx: RunContext, flow: Flow[..., object], inputs: dict[str, object], board_port: int | None
) -> Attempt:
    """Run the flow's body; how it ended as (output, status, error, pause token)."""
    async with anyio.create_task_group() as group:
        with running(ctx, Scope("", ctx.state.ledger)), owning(BranchWork(group)) as work:
            try:
                async with _board_served(ctx, board_port):
                    output = await _within_wall_clock(ctx, flow, inputs, work)
            except RunPaused as paused:
                return None, "paused", paused, paused.token
            except Exception as exc:
                pause = _pause_inside(exc)
                if pause is not None:
                    return None, "paused", pause, pause.token
                return None, "failed", located(exc), None
            finally:
                await work.stop()  # a stream the flow never closed ends with the flow
    return output, "ok", None, None


def _board_served(ctx: RunContext, port: int | None) -> AbstractAsyncContextManager[object]:
    """The board served over HTTP for the flow's duration, when asked for."""
    if port is None:
        return contextlib.nullcontext()
    from swarmflow.teams.http import served_board  # only then: keeps `import swarmflow` cheap

    return served_board(ctx, port)


async def _within_wall_clock(
    ctx: RunContext, flow: Flow[..., object], inputs: dict[str, object], work: BranchWork
) -> object:
    seconds = ctx.state.ledger.limits.seconds
    if seconds is None:
        # No deadline, no cancel scope for it: anyio walks every scope around a task at each
        # checkpoint, and every branch of a fan-out checks twice before it starts its work.
        return await _flow_body(ctx, flow, inputs, work)
    # A resumed run's ledger counts the time its earlier processes ran: only the rest is left.
    with anyio.move_on_after(seconds - ctx.state.ledger.elapsed()):
        return await _flow_body(ctx, flow, inputs, work)
    raise BudgetExhausted(
        f"run exceeded its wall-clock limit of {seconds}s",
        reason=EndReason.WALL_CLOCK.value,
        ledger="run",
    )


async def _flow_body(
    ctx: RunContext, flow: Flow[..., object], inputs: dict[str, object], work: BranchWork
) -> object:
    async with serving(ctx, flow.team.agents):  # tool servers live as long as the flow
        output = await flow.fn(**inputs)
        await work.finish()
    return output


async def _close(
    ctx: RunContext, status: str, error: BaseException | None, output: object = None
) -> tuple[str, BaseException | None]:
    """End every session, release workspaces and clients, record the run's end (once)."""
    log = ctx.deps.log
    for session in list(ctx.state.sessions):
        session.close()
    if ctx.deps.feedback is not None:  # no language server outlives its run
        await ctx.deps.feedback.aclose()
    # A run that did not finish keeps its worktrees and branches: nothing done is lost, and a
    # person (or a resumed run) can pick the work up from them.
    keep = ctx.deps.keep_workspaces or status != "ok"
    ctx.deps.write_ahead()  # removing worktrees is an external effect, and may fail
    try:
        if ctx.deps.workspaces is not None:
            await ctx.deps.workspaces.close(keep=keep)
    except SwarmflowError as exc:  # the run's work is done; say what could not be cleaned up
        status, error = "failed", error or exc
    if ctx.deps.experience is not None and status in ("ok", "failed"):
        from swarmflow.experience.reflect import reflect_run
        from swarmflow.experience.run_notes import RunExperience

        if isinstance(ctx.deps.experience, RunExperience):  # before the models close
            # Inside the run, at its root: the handoff gate the replayed sessions' recorded
            # histories go through (`durable.replay`) records its refusals there.
            with running(ctx, Scope("", ctx.state.ledger)):
                await reflect_run(ctx, ctx.deps.experience)
    await _close_models(ctx)
    ledger = ctx.state.ledger
    log.emit(
        RunFinished,
        status=status,
        error=None if error is None else f"{type(error).__name__}: {error}",
        tokens=ledger.spent_tokens,
        cost=ledger.spent_cost,
        calls=ledger.spent_calls,
        seconds=ledger.elapsed(),
        graph=ctx.state.graph.mermaid(),
        output=to_jsonable_python(output, fallback=str) if status == "ok" else None,
        nodes=ctx.state.graph.rows(),
    )
    log.close()
    if ctx.deps.journal is not None:
        ctx.deps.journal.close()
    release(ctx.deps.run_dir)
    return status, error


def _experience(
    option: object, root: Path, run_id: str, repo: str | Path | None
) -> RunExperience | None:
    """The run's experience (`experience=`), its store opened and checked; None without one.
    Imported only then: a run without experience loads no SQLite."""
    if option is None or option is False:
        return None
    from swarmflow.experience.run_notes import RunExperience, open_store

    store = open_store(option, root)
    return RunExperience(store, run_id, repo) if store is not None else None


async def _close_models(ctx: RunContext) -> None:
    closer = getattr(ctx.deps.model_for, "aclose", None)
    if closer is not None:
        await closer()


def _pause_inside(exc: Exception) -> RunPaused | None:
    """A pause that a task group wrapped (every member a pause): the run pauses, not fails."""
    if isinstance(exc, ExceptionGroup):
        leaves = exc.exceptions
        if leaves and all(_pause_inside(e) for e in leaves):
            return _pause_inside(leaves[0])
        return None
    return exc if isinstance(exc, RunPaused) else None
