"""Arm factors: the seeds' mechanisms, set on an arm without editing its flow.

A `Factors` value names what an arm changes about the flow's team or its runs: how agents hear
board mentions (AgentRadio's blocking receive or passive awareness), where they work (STORM's
shared workspace, git worktrees, the checkout in place), their context policy, language-server
feedback, experience across tasks, goal evaluators (openJiuwen's mechanisms), how many
instances of an agent there are (a sweep of the number of coders), and a harness in place of
a native agent (OpenCollab's cross-harness table). `apply_factors` writes them into the team
the arm runs; `run_options` gives the run options they need; `factor_record` is what the
experiment records of them, so that `swarmflow.experiments.realized` can check, from each
run's events, that every factor really happened.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from swarmflow.core.context_policy import ContextPolicy
from swarmflow.core.feedback_policy import Feedback
from swarmflow.core.harness_spec import Harness
from swarmflow.core.team import Agent, Team
from swarmflow.runtime.flow import Flow

Listening = Literal["blocking", "passive"]
Place = Literal["worktree", "shared", "local"]
ExperienceMode = Literal["off", "fresh", "shared"]
WAIT = "wait_for_mention"
FACTOR_NAMES = (
    "listening",
    "workspace",
    "context",
    "feedback",
    "experience",
    "goals",
    "instances",
    "harness",
)
"""Every factor an arm can set, in the order the report lists them."""


class Factors(BaseModel):
    """What an arm sets on the flow's team and runs; None (or empty): as the flow declares."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    listening: Listening | None = None
    """How every agent hears board mentions: `blocking` (it calls `wait_for_mention`, which
    it is given) or `passive` (at its next step boundary, no step spent)."""
    workspace: Place | dict[str, Place] | None = None
    """One kind for the team (every agent that declares a workspace; every agent when none
    does), or agent -> kind."""
    context: ContextPolicy | None = None
    """Every agent's context policy (levels and watermarks; a mapping is accepted)."""
    feedback: Literal["off", "lsp"] | Feedback | None = None
    """Language-server diagnostics for every agent that has a workspace, or none."""
    experience: ExperienceMode | str | None = None
    """`off`; `fresh`: a store of the arm's own (`OUT/experience/<arm>.db`); `shared`: one
    store for every arm that says so (`OUT/experience/shared.db`); or a store's path."""
    goals: dict[str, tuple[Any, ...]] | None = None
    """Agent -> its goal evaluators (the run's `goals=`)."""
    instances: dict[str, int] = Field(default_factory=dict)
    """Agent -> how many of it the team has: the first keeps its name, the others are
    `<name>_2`, `<name>_3` ... with the same card, tools and edges."""
    harness: dict[str, Harness] = Field(default_factory=dict)
    """Agent -> the outside program that does its work, through the metering endpoint."""

    @field_validator("context", mode="before")
    @classmethod
    def _context(cls, value: object) -> object:
        return ContextPolicy(**value) if isinstance(value, Mapping) else value

    @field_validator("instances")
    @classmethod
    def _counts(cls, value: dict[str, int]) -> dict[str, int]:
        bad = {k: n for k, n in value.items() if not isinstance(n, int) or not 1 <= n <= 64}
        if bad:
            raise ValueError(f"instances must be whole numbers from 1 to 64, got {bad}")
        return value

    def chosen(self) -> tuple[str, ...]:
        """The factors this value sets, by name."""
        return tuple(n for n in FACTOR_NAMES if getattr(self, n) not in (None, {}, ()))

    def agents_named(self) -> set[str]:
        """Every agent a per-agent factor names."""
        named = set(self.instances) | set(self.harness) | set(self.goals or {})
        if isinstance(self.workspace, dict):
            named |= set(self.workspace)
        return named


def check_agents(factors: Factors, flow: Flow[..., object], arm: str) -> None:
    """`ValueError` (one line) when a factor names an agent the flow does not declare."""
    declared = set(flow.team.names)
    unknown = sorted(factors.agents_named() - declared)
    if unknown:
        raise ValueError(
            f"arm {arm!r}: factors name {', '.join(unknown)}, which the flow {flow.name!r} "
            f"does not declare (its agents: {', '.join(sorted(declared))})"
        )


def apply_factors(flow: Flow[..., object], factors: Factors) -> Flow[..., object]:
    """The flow with the factors written into its team: the same code, its own `Flow` (so a
    run's `run_started` records what the arm ran)."""
    if not factors.chosen():
        return flow
    team = flow.team
    places = _places(team, factors.workspace)
    agents = [_changed(a, factors, places.get(a.name)) for a in team.agents]
    agents, edges = _instances(agents, tuple(team.edges), factors.instances)
    changed = Team(agents=agents, edges=edges, entry=team.entry)
    return Flow(flow.fn, team=changed, budget=flow.limits, name=flow.name, card_path=flow.card_path)


def _places(team: Team, workspace: Place | dict[str, Place] | None) -> dict[str, Place]:
    if workspace is None:
        return {}
    if isinstance(workspace, dict):
        return dict(workspace)
    working = [a.name for a in team.agents if a.workspace != "none"] or team.names
    return dict.fromkeys(working, workspace)


def _changed(agent: Agent, factors: Factors, place: Place | None) -> Agent:
    update: dict[str, object] = {}
    if place is not None:
        update["workspace"] = place
    if factors.listening == "blocking":
        update["listen"] = "blocking"
        if WAIT not in agent.tools:
            update["tools"] = (*agent.tools, WAIT)
    elif factors.listening == "passive":
        update["listen"] = "passive"
    if factors.context is not None:
        update["context"] = factors.context
    working = update.get("workspace", agent.workspace) != "none"
    if factors.feedback is not None and working:
        update["feedback"] = Feedback.coerce(factors.feedback)
    harness = factors.harness.get(agent.name)
    if harness is not None:
        update["harness"] = harness
        if not working:
            update["workspace"] = "local"
    return agent.model_copy(update=update) if update else agent


def instance_names(name: str, count: int) -> list[str]:
    """The names of `count` instances of the agent `name`."""
    return [name, *(f"{name}_{i}" for i in range(2, count + 1))]


def instance_map(flow: Flow[..., object], factors: Factors) -> dict[str, list[str]]:
    """Every declared agent -> the names of its instances in the arm's team (a flow with an
    `instances` parameter is given this, so its code can fan out over them)."""
    return {
        a.name: instance_names(a.name, factors.instances.get(a.name, 1)) for a in flow.team.agents
    }


def _instances(
    agents: list[Agent], edges: tuple[tuple[str, str], ...], counts: Mapping[str, int]
) -> tuple[list[Agent], list[tuple[str, str]]]:
    out: list[Agent] = []
    for a in agents:
        names = instance_names(a.name, counts.get(a.name, 1))
        out.extend(a if n == a.name else a.model_copy(update={"name": n}) for n in names)
    copies = {name: instance_names(name, n) for name, n in counts.items()}
    new_edges: list[tuple[str, str]] = []
    for source, target in edges:
        for s in copies.get(source, [source]):
            for t in copies.get(target, [target]):
                if (s, t) not in new_edges and (s != t or source == target):
                    new_edges.append((s, t))
    return out, new_edges


def run_options(factors: Factors, root: Path, arm: str) -> dict[str, object]:
    """The run options the factors need (`experience=`, `goals=`), for every run of the arm."""
    options: dict[str, object] = {}
    store = experience_store(factors.experience, root, arm)
    if store is not None:
        store.parent.mkdir(parents=True, exist_ok=True)
        options["experience"] = str(store)
    if factors.goals:
        options["goals"] = {k: list(v) for k, v in factors.goals.items()}
    return options


def experience_store(mode: str | None, root: Path, arm: str) -> Path | None:
    """Where the arm's experience store is; None: the arm uses none."""
    if mode in (None, "off"):
        return None
    if mode == "fresh":
        return root / "experience" / f"{arm}.db"
    if mode == "shared":
        return root / "experience" / "shared.db"
    return Path(str(mode)).expanduser().resolve()


def factor_record(factors: Factors, flow: Flow[..., object]) -> dict[str, object]:
    """What the experiment records of the factors: what the run's events are checked against
    (`swarmflow.experiments.realized`); only the factors the arm sets."""
    record: dict[str, object] = {}
    if factors.listening is not None:
        record["listening"] = factors.listening
    if factors.workspace is not None:
        record["workspace"] = _places(flow.team, factors.workspace)
    if factors.context is not None:
        record["context"] = list(factors.context.processors)
    if factors.feedback is not None:
        record["feedback"] = "off" if Feedback.coerce(factors.feedback) is None else "lsp"
    if factors.experience is not None:
        record["experience"] = "off" if factors.experience == "off" else "on"
    if factors.goals:
        record["goals"] = sorted(factors.goals)
    if factors.instances:
        record["instances"] = {
            name: instance_names(name, n) for name, n in factors.instances.items()
        }
    if factors.harness:
        record["harness"] = {n: h.name for n, h in factors.harness.items()}
    return record


def factor_label(name: str, value: object) -> str:
    """A factor's value in an arm's name (letters, digits, `._-`)."""
    if isinstance(value, bool):
        text = "on" if value else "off"
    elif isinstance(value, str | int | float):
        text = str(value)
    elif isinstance(value, Factors):
        text = "-".join(value.chosen()) or "none"
    else:
        text = getattr(value, "name", None) or type(value).__name__
    cleaned = "".join(c if c.isalnum() or c in "._-" else "-" for c in str(text))
    return f"{name}-{cleaned}"


def as_sequence(values: object) -> Sequence[object]:
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise ValueError(f"a factor's levels are a list, got {values!r}")
    return values
