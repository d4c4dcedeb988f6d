"""An experiment, declared: arms x tasks x repeats, per-run limits and a grader.

An experiment is a Python module holding an `Experiment(...)`; `swarmflow experiment run
file.py:NAME` finds it as every command finds a flow. Everything here is pydantic, checked
when it is built, so a mistake in the declaration is one line before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from swarmflow.core.budget import Limits
from swarmflow.core.messages import Model
from swarmflow.core.team import Agent, Team
from swarmflow.experiments.bestof import BestOf
from swarmflow.experiments.budgets import RunBudget
from swarmflow.experiments.factors import Factors, apply_factors, check_agents
from swarmflow.experiments.graders import Grader
from swarmflow.experiments.sweeps import expand_sweep
from swarmflow.runtime.flow import Flow

Delegation = Literal["required", "offered", "none"]
Controller = Literal["single", "workflow", "team"]
NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
"""An arm's name: it names a folder of the experiment's directory."""


class Assigned(BaseModel):
    """The organization an arm is assigned, declared before it runs; adherence is measured
    against it with the same axes `swarmflow report` shows."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    delegation: Delegation = "none"
    """`required` or `offered`: the delegation axis applies (a run where no teammate along a
    declared edge worked deviates, as in OpenCollab's Table 15); `none`: it does not."""
    tools: dict[str, tuple[str, ...]] | None = None
    """Agent -> the tool set it is assigned; a call outside it deviates on the role boundary
    axis. None: each agent's declared tool set is its assignment."""
    context: tuple[str, ...] | None = None
    """The compaction levels allowed; another level firing deviates on the context policy
    axis. None: any level."""


class Arm(BaseModel):
    """One configuration: a flow plus what differs from the other arms."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    name: str = Field(pattern=NAME)
    flow: Any
    """The arm's `@flow`."""
    model: Any = None
    """A model name or object for this arm alone (a model ablation); None: the model the
    command is given (`--model`, `--model-object`)."""
    demo: Callable[[], Model] | None = None
    """Makes this arm's scripted offline policy for `--demo` (labelled as scripted)."""
    cards: dict[str, str] = Field(default_factory=dict)
    """Agent -> the role card it gets in this arm instead of its declared one."""
    tools: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """Agent -> the tool set it gets in this arm instead of its declared one."""
    controller: Controller = "single"
    """How the arm's work is ordered: one agent, a script (Workflow) or the model (Team)."""
    assigned: Assigned = Assigned()
    run_budget: RunBudget = Limits()
    """Each run's limits in this arm, over the experiment's `run_budget` (each one it sets)."""
    inputs: dict[str, object] = Field(default_factory=dict)
    """Flow inputs this arm adds to every task's."""
    reference: bool = False
    """The arm the others are compared with (exactly one arm is)."""
    note: str = ""
    """What differs, in a few words, for the table."""
    debris: tuple[str, ...] = ()
    """More build-debris patterns (gitignore-style) left out of this arm's products, beside
    the default list and the task's (docs/experiments.md)."""
    factors: Factors = Factors()
    """The mechanisms this arm sets on the flow's team and runs (listening, workspace, context,
    feedback, experience, goals, instances, harness); each is checked from the run's events."""
    best_of: BestOf | None = None
    """k independent runs per task, one result chosen (AgentRadio's B1); all k paid for."""

    @field_validator("flow")
    @classmethod
    def _a_flow(cls, value: object) -> Flow[..., object]:
        if not isinstance(value, Flow):
            raise ValueError(f"an arm's flow must be a @flow, got {type(value).__name__}")
        return value

    @model_validator(mode="after")
    def _known_agents(self) -> Arm:
        declared = {a.name for a in self.flow.team.agents}
        for field, given in (("cards", self.cards), ("tools", self.tools)):
            unknown = sorted(set(given) - declared)
            if unknown:
                raise ValueError(
                    f"arm {self.name!r}: {field} names {', '.join(unknown)}, which the flow "
                    f"{self.flow.name!r} does not declare (its agents: "
                    f"{', '.join(sorted(declared))})"
                )
        check_agents(self.factors, self.flow, self.name)
        apply_factors(self.flow, self.factors)  # a team the factors break is refused here
        return self

    def variant(self) -> Flow[..., object]:
        """The arm's flow with its cards and tool sets put in: the same code, the same team
        otherwise (a Flow of its own, so the run's `run_started` records what this arm ran),
        with the arm's factors written into its team."""
        return apply_factors(self._carded(), self.factors)

    def _carded(self) -> Flow[..., object]:
        if not self.cards and not self.tools:
            return self.flow  # type: ignore[no-any-return]
        team = self.flow.team
        agents = [_changed(a, self.cards.get(a.name), self.tools.get(a.name)) for a in team.agents]
        changed = Team(agents=agents, edges=team.edges, entry=team.entry)
        return Flow(
            self.flow.fn,
            team=changed,
            budget=self.flow.limits,
            name=self.flow.name,
            card_path=self.flow.card_path,
        )


def _changed(agent: Agent, card: str | None, tools: tuple[str, ...] | None) -> Agent:
    update: dict[str, object] = {}
    if card is not None:
        update["card"] = card
    if tools is not None:
        update["tools"] = tuple(tools)
    return agent.model_copy(update=update) if update else agent


TaskSource = str | Path | Callable[[Path], Path]


class Experiment(BaseModel):
    """Arms x tasks x repeats, graded: what `swarmflow experiment run` runs."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    name: str = Field(pattern=NAME)
    arms: tuple[Arm, ...]
    tasks: Any
    """The task set: a JSONL path, or a function that writes one into the folder it is given
    (a generated suite) and returns its path."""
    grader: Grader
    repeats: int = Field(1, ge=1, le=1000)
    run_budget: RunBudget = Limits()
    """Each run's limits, in every arm (an arm's own `run_budget` overrides each one it sets)."""
    concurrency: int = Field(4, ge=1)
    """Runs at once, over all arms (one pool of workers serves every arm)."""
    seed: int = 0
    """Seeds the order in which the runs of all arms start (`experiment.json` records both)."""
    pin_modes: bool = False
    """Keep every model's output modes as its capabilities say: a server that rejects one
    fails the call instead of stepping down (`run(pin_modes=True)`)."""
    judge_model: Any = None
    """The model of a `rubric` grader's judge (None: the command's model)."""
    judge_demo: Callable[[], Model] | None = None
    """Makes the judge's scripted policy for `--demo`."""
    factors: dict[str, object] | None = None
    """A sweep: factor -> its levels; expanded into arms that differ from the reference arm
    in those factors alone (`swarmflow.experiments.sweeps`)."""
    grid: Literal["full"] | list[dict[str, object]] = "full"
    """Which combinations of a sweep's levels become arms: every one, or those listed."""
    sweep_from: str | None = None
    """The arm a sweep varies (None: the reference)."""
    ladder: tuple[str, ...] = ()
    """Arms in order: each step is compared with the one before it, paired by task."""

    @model_validator(mode="before")
    @classmethod
    def _sweep(cls, data: object) -> object:
        return expand_sweep(data, Arm) if isinstance(data, dict) else data

    @field_validator("tasks")
    @classmethod
    def _source(cls, value: object) -> object:
        if isinstance(value, str | Path) or callable(value):
            return value
        raise ValueError("tasks must be a JSONL path or a function that writes one")

    @model_validator(mode="after")
    def _arms(self) -> Experiment:
        if not self.arms:
            raise ValueError("an experiment needs at least one arm")
        names = [a.name for a in self.arms]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"arm names must differ: {', '.join(twice)} twice")
        references = [a.name for a in self.arms if a.reference]
        if len(references) != 1:
            found = ", ".join(references) or "none"
            raise ValueError(f"exactly one arm must be the reference (reference=True); {found}")
        unknown = sorted(set(self.ladder) - set(names))
        if unknown:
            raise ValueError(f"the ladder names {', '.join(unknown)}, which is no arm")
        return self

    @property
    def reference(self) -> Arm:
        return next(a for a in self.arms if a.reference)

    def run_limits(self, arm: Arm) -> Limits:
        """Each run's limits in `arm`: the experiment's, with the arm's own over them."""
        return arm.run_budget.over(self.run_budget)
