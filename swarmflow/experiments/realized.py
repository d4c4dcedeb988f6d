"""Whether each factor an arm set really happened in a run, read from the run's events.

An arm's factors are written into its team before it runs (`swarmflow.experiments.factors`);
this fold reads the run's `run_started` (the team as it ran: each agent's workspace and
context levels) and the events the mechanisms leave (mentions delivered and how, shared-file
versions, language-server passes, experience offered or written, goal rounds, harness calls
through the metering endpoint) and says, per factor, whether the run shows it. A factor
whose mechanism never showed is not realized: a passive arm whose agents never received a
mention passively is not adherent on the listening axis, as a Team arm whose lead never
delegated is not adherent on delegation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from swarmflow.record.events import (
    ContextCompacted,
    DiagnosticsPosted,
    EventBase,
    ExperienceRetrieved,
    ExperienceWritten,
    FeedbackChecked,
    FeedbackUnavailable,
    GoalEvaluated,
    HarnessStarted,
    MentionDelivered,
    ModelCalled,
    RunStarted,
    SharedFileWritten,
)

EVIDENCE_FACTORS = frozenset({"listening", "feedback", "experience", "goals", "harness"})
"""Factors shown by an event a run cut short may not have reached (OpenCollab's unverified)."""


@dataclass
class FactorFold:
    """Folds one run's events against the factors its arm recorded."""

    record: dict[str, object]
    roles: dict[str, dict[str, Any]] = field(default_factory=dict)
    agents: list[str] = field(default_factory=list)
    modes: set[str] = field(default_factory=set)
    shared_writes: int = 0
    fired_levels: set[str] = field(default_factory=set)
    feedback_passes: int = 0
    feedback_down: int = 0
    experience: int = 0
    goal_agents: set[str] = field(default_factory=set)
    harness_started: set[str] = field(default_factory=set)
    endpoint_calls: set[str] = field(default_factory=set)

    def add(self, e: EventBase) -> None:
        if isinstance(e, RunStarted):
            self.roles, self.agents = dict(e.roles), list(e.agents)
        elif isinstance(e, MentionDelivered):
            self.modes.add(e.mode)
        elif isinstance(e, SharedFileWritten):
            self.shared_writes += 1
        elif isinstance(e, ContextCompacted):
            self.fired_levels.add(e.level)
        elif isinstance(e, FeedbackChecked | DiagnosticsPosted):
            self.feedback_passes += 1
        elif isinstance(e, FeedbackUnavailable):
            self.feedback_down += 1
        elif isinstance(e, ExperienceRetrieved | ExperienceWritten):
            self.experience += 1
        elif isinstance(e, GoalEvaluated) and e.agent:
            self.goal_agents.add(e.agent)
        elif isinstance(e, HarnessStarted) and e.agent:
            self.harness_started.add(e.agent)
        elif isinstance(e, ModelCalled) and e.agent and e.request_shape is not None:
            self.endpoint_calls.add(e.agent)  # a harness's call, metered by the endpoint

    def result(self) -> dict[str, bool]:
        """Factor -> whether the run shows it, for every factor the arm set."""
        checks: dict[str, Callable[[Any], bool]] = {
            "listening": self._listening,
            "workspace": self._workspace,
            "context": self._context,
            "feedback": self._feedback,
            "experience": self._experience,
            "goals": self._goals,
            "instances": self._instances,
            "harness": self._harness,
        }
        return {name: checks[name](value) for name, value in self.record.items() if name in checks}

    def _listening(self, mode: str) -> bool:
        """Some mention was delivered, and every one in the assigned mode."""
        return self.modes == {mode}

    def _workspace(self, places: dict[str, str]) -> bool:
        """Every agent ran in its assigned kind; a shared arm's workspace took a write."""
        ran = all(self.roles.get(a, {}).get("workspace") == kind for a, kind in places.items())
        shared = "shared" in places.values()
        return ran and (not shared or self.shared_writes > 0)

    def _context(self, levels: list[str]) -> bool:
        """Every agent ran under the assigned levels, and no other level fired."""
        allowed = set(levels) | {"cut_observations"}  # the last resort is always there
        ran = all(set(r.get("context", [])) <= allowed for r in self.roles.values())
        return ran and self.fired_levels <= allowed

    def _feedback(self, mode: str) -> bool:
        if mode == "off":
            return self.feedback_passes == 0
        return self.feedback_passes > 0 and self.feedback_down == 0

    def _experience(self, mode: str) -> bool:
        return self.experience == 0 if mode == "off" else self.experience > 0

    def _goals(self, agents: list[str]) -> bool:
        return set(agents) <= self.goal_agents

    def _instances(self, names: dict[str, list[str]]) -> bool:
        return all(set(copies) <= set(self.agents) for copies in names.values())

    def _harness(self, harnesses: dict[str, str]) -> bool:
        """Each harness agent's program ran, and its model calls went through the endpoint."""
        agents = set(harnesses)
        return agents <= self.harness_started and agents <= self.endpoint_calls
