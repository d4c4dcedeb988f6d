"""Wiring a run: the adapters, models, sinks and channels `run()` hands the runtime.

This is the composition root: the one place that names concrete adapters.
"""

from __future__ import annotations

import difflib
import inspect
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarmflow.core.budget import Ledger, Limits
from swarmflow.core.context_policy import DEFAULT_POLICY
from swarmflow.core.errors import ConfigError
from swarmflow.core.messages import Model
from swarmflow.core.ports import HumanChannel
from swarmflow.core.pricing import PriceTable
from swarmflow.core.team import Agent
from swarmflow.durable.journaled import journaled_call
from swarmflow.durable.reopen import reopen_run
from swarmflow.durable.replay import journaled_turn
from swarmflow.models.guard import check_real_call_allowed
from swarmflow.operators.human_channels import ConsoleHuman, NoHuman, ScriptedHuman
from swarmflow.record.events import EndpointProbed, ModelRetried, OutputModeSteppedDown
from swarmflow.record.files import EVENTS_FILE
from swarmflow.record.journal import Journal
from swarmflow.record.sink import EventSink
from swarmflow.record.sinks import JsonlSink, MemorySink
from swarmflow.runner.live import report_delta
from swarmflow.runtime.context import RunContext, current_session
from swarmflow.runtime.deps import AgentCaller, RunDeps
from swarmflow.runtime.flow import Flow
from swarmflow.runtime.rails import Rails
from swarmflow.sessions.call import run_call
from swarmflow.sessions.structured import take_turn
from swarmflow.teams.board import board_for

if TYPE_CHECKING:
    from swarmflow.feedback import LanguageFeedback
    from swarmflow.models._modes import ModeChange
    from swarmflow.record.eventlog import EventLog
    from swarmflow.tools import ToolRegistry
    from swarmflow.workspaces import DefaultWorkspaces

ModelSpec = Model | str | Callable[[Agent], Model] | None


def check_team(flow: Flow[..., object]) -> None:
    """Refuse to start a flow whose team declaration has errors (unknown agents in edges)."""
    errors = [d.message for d in flow.team.check() if d.severity == "error"]
    if errors:
        raise ConfigError(f"flow {flow.name!r} declares a broken team: " + "; ".join(errors))


def check_inputs(
    flow: Flow[..., object], inputs: dict[str, Any], options: Sequence[str] = ()
) -> None:
    """Refuse inputs the flow does not take, with the closest input or run option named."""
    params = flow.signature.parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    unknown = [] if takes_any else sorted(set(inputs) - set(params))
    if unknown:
        raise ConfigError(
            f"flow {flow.name}{flow.signature} has no input "
            + "; no input ".join(_did_you_mean(name, list(params), options) for name in unknown)
        )
    try:
        flow.signature.bind(**inputs)
    except TypeError as exc:
        raise ConfigError(f"inputs do not fit flow {flow.name}{flow.signature}: {exc}") from None


def _did_you_mean(name: str, params: Sequence[str], options: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, [*params, *options], n=1, cutoff=0.6)
    if not close:
        return repr(name)
    kind = "the input" if close[0] in params else "the run option"
    return f"{name!r} (did you mean {kind} {close[0]}=?)"


def choose_sinks(
    events: str | Iterable[EventSink] | None, run_dir: Path
) -> tuple[MemorySink | None, list[EventSink]]:
    """The in-memory sink `events` asks for, and every sink of the run.

    The run directory's `events.jsonl` is always among them, whatever `events` says: it is
    the run's one ordered record, which `report`, `runs` and `resume` read back (a resumed
    run takes the answers, the board and the spend from it). `events` chooses whether the
    events are also kept in memory (`"both"`, `"memory"`, or a list holding a `MemorySink`)
    and which sinks of your own receive them.
    """
    path = run_dir / EVENTS_FILE
    if events is None or events in ("both", "memory"):
        memory = MemorySink()
        return memory, [memory, JsonlSink(path)]
    if events == "jsonl":
        return None, [JsonlSink(path)]
    if isinstance(events, str):
        raise ConfigError(f"events={events!r}; use 'both', 'jsonl', 'memory' or a list of sinks")
    given = list(events)
    found = next((s for s in given if isinstance(s, MemorySink)), None)
    if any(isinstance(s, JsonlSink) and s.path.resolve() == path.resolve() for s in given):
        return found, given  # the run's own log is among them: one writer for the file
    return found, [*given, JsonlSink(path)]


def model_secrets(model: ModelSpec) -> list[str]:
    secrets = getattr(model, "secrets", None)
    return list(secrets()) if callable(secrets) else []


def record_probe(log: EventLog, model_for: object) -> None:
    """Record what the run's model endpoint was probed to honour (`endpoint_probed`), when
    the command line probed it (`cli.model_options`)."""
    profile = getattr(getattr(model_for, "default", None), "endpoint_profile", None)
    if isinstance(profile, dict):
        log.emit(EndpointProbed, **profile)


def _report_retry(attempt: int, error: str, delay: float) -> None:
    """Turn an adapter's retry into a `model_retried` event of the session that waits."""
    session = current_session.get()
    if session is not None and not session.closed:
        session.emit(ModelRetried, attempt=attempt, error=error, delay=delay)


def _report_mode_change(endpoint: str, change: ModeChange) -> None:
    """Turn an adapter's step-down into an `output_mode_stepped_down` event of the session whose
    call the server rejected (the one call that decided it)."""
    session = current_session.get()
    if session is not None and not session.closed:
        session.emit(
            OutputModeSteppedDown,
            endpoint=endpoint,
            rejected=change.rejected,
            chosen=change.chosen,
            reason=change.reason,
        )


def _instrument(model: Model) -> Model:
    if hasattr(model, "on_retry") and model.on_retry is None:
        model.on_retry = _report_retry
    if hasattr(model, "on_mode_change") and model.on_mode_change is None:
        model.on_mode_change = _report_mode_change
    if hasattr(model, "on_delta") and model.on_delta is None:
        model.on_delta = report_delta  # streamed text reaches `swarmflow.stream` readers
    return model


class ModelResolver:
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


def default_tools() -> ToolRegistry:
    from swarmflow.tools import default_registry

    return default_registry()


def workspaces_for(
    flow: Flow[..., object], run_dir: Path, repo: str | Path | None
) -> DefaultWorkspaces | None:
    if all(a.workspace == "none" for a in flow.team.agents):
        return None
    from swarmflow.workspaces import DefaultWorkspaces

    return DefaultWorkspaces(run_dir, Path(repo).resolve() if repo else None)


def feedback_for(team: object) -> LanguageFeedback | None:
    """The run's language-server feedback, when an agent of its team asks for it."""
    agents = getattr(team, "agents", ())
    if not any(agent.feedback is not None for agent in agents):
        return None
    from swarmflow.feedback import LanguageFeedback  # only then: `import swarmflow` stays cheap

    return LanguageFeedback()


def human_channel(human: HumanChannel | Sequence[Any] | Mapping[str, Any] | None) -> HumanChannel:
    if human is None:
        return ConsoleHuman() if sys.stdin.isatty() and not os.environ.get("CI") else NoHuman()
    if hasattr(human, "ask"):
        return human  # type: ignore[return-value]
    return ScriptedHuman(human)


def merge_limits(declared: Limits, given: Limits) -> Limits:
    return given.over(declared)


def roles_of(flow: Flow[..., object]) -> dict[str, dict[str, object]]:
    return {
        a.name: {
            "tools": list(a.tools),
            "allowance": a.allowance,
            "workspace": a.workspace,
            "max_steps": a.max_steps,
            "context": list((a.context or DEFAULT_POLICY).levels),
        }
        for a in flow.team.agents
    }


def limits_of(ledger: Ledger) -> dict[str, float | int | None]:
    lim = ledger.limits
    return {"tokens": lim.tokens, "cost": lim.cost, "calls": lim.calls, "seconds": lim.seconds}


def jsonable(inputs: Mapping[str, object]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in inputs.items():
        out[key] = (
            value if isinstance(value, str | int | float | bool | type(None)) else repr(value)
        )
    return out


def run_deps(*, journal: Journal | None, **given: Any) -> RunDeps:
    """What a run is given, with its agent-call layers chosen: the journaled call and turn
    wrap the plain ones when the run keeps a journal, so the plain ones never look for one."""
    journaled = journal is not None
    given.setdefault("feedback", feedback_for(given.get("team")))
    call_agent: AgentCaller = journaled_call if journaled else run_call
    if any(agent.harness is not None for agent in given["team"].agents):
        # A harness agent's call runs its program, journaled as every agent call is (its
        # machinery is imported only for a team that has one).
        from swarmflow.harnesses.call import harness_caller

        call_agent = harness_caller(call_agent, journaled_call if journaled else None)
    return RunDeps(
        **given,
        journal=journal,
        call_agent=call_agent,
        take_turn=journaled_turn if journaled else take_turn,
        board_for=board_for,
    )


def open_run_board(
    run_dir: str | Path, load_flow: Callable[[str], Flow[..., object]]
) -> AbstractAsyncContextManager[RunContext]:
    """A stopped run reopened for its board alone (`swarmflow board serve RUN_DIR`): its
    journal and log continue, and it runs no agent (no model, no tools of its own)."""
    from swarmflow.tools import ToolRegistry

    compose = partial(
        run_deps,
        model_for=_no_model,
        tools=ToolRegistry(),
        human=None,
        workspaces=None,
        prices=PriceTable(),
        rails=Rails(),
    )
    return reopen_run(run_dir, load_flow, compose)


def _no_model(agent: Agent) -> Model:
    raise ConfigError("a served board runs no agent: it has no model")
