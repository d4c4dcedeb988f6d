"""The exception tree. Every error swarmflow raises derives from `SwarmflowError`.

    SwarmflowError
    ├── ConfigError                 caller misuse: bad declarations, unknown names
    │   ├── TemplateError           a role card failed to render
    │   ├── ResumeDiverged          a strict resume met a call that no longer matches
    │   └── RailError               a rail registered for a hook that does not exist
    ├── IllegalTransition           a session tried a transition its table forbids
    ├── TopologyError               a handoff along an undeclared edge
    ├── BudgetExhausted             a reservation did not fit a ledger
    ├── ModelError                  the model endpoint failed
    │   ├── ModelAuthError
    │   ├── ModelNotFound
    │   ├── ContextLengthExceeded
    │   ├── ModelUnavailable        retries on 429/5xx/timeouts ran out
    │   └── ModelResponseError      the endpoint answered something unusable
    ├── ModelCallsBlocked           a real model call inside tests without opt-in
    ├── ToolError                   a tool failed; becomes an observation for the model
    │   └── WorkspaceEscape         a path outside the agent's workspace
    ├── WorkspaceError              a workspace could not be prepared or changed
    ├── HumanError
    │   └── HumanTimeout
    ├── AgentFailed                 an agent session ended in error
    ├── RunPaused                   control signal: a deferred human question stops the run
    └── FlowFailed                  `run()` ended in failure; the `RunResult` is on `.result`

Errors carry the agent, session and operator they came from where known.

Two kinds of failure (see `is_fault_of_the_world`): a **fault of the world** (a model error
after retries, a tool error, a budget or deadline stop, a person who did not answer) becomes
a `Failed` outcome and the run goes on; a **mistake** in the flow or its declaration (an
unknown agent, a card that does not render, an unknown tool, a handoff along an undeclared
edge made by the flow's own code, any other exception from the flow's code) fails the run.
"""

from __future__ import annotations

from typing import Any


class SwarmflowError(Exception):
    """Root of every swarmflow error."""

    def __init__(
        self,
        message: str,
        *,
        agent: str | None = None,
        session: str | None = None,
        operator: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.agent = agent
        self.session = session
        self.operator = operator

    def __str__(self) -> str:
        where = [f"{k}={v}" for k, v in self._where().items() if v]
        return f"{self.message} ({', '.join(where)})" if where else self.message

    def _where(self) -> dict[str, str | None]:
        return {"agent": self.agent, "session": self.session, "operator": self.operator}


class ConfigError(SwarmflowError):
    """The caller declared something that cannot work."""


class TemplateError(ConfigError):
    """A role card failed to render; the message names the template and the variable."""


class RailError(ConfigError):
    """A rail was registered for a hook that does not exist."""


class IllegalTransition(SwarmflowError):
    """A session tried a state transition that its table does not allow."""


class TopologyError(SwarmflowError):
    """A value would cross an edge the team does not declare. Nothing was sent."""

    def __init__(
        self,
        message: str,
        *,
        source: str,
        target: str,
        declared: list[tuple[str, str]],
        **kw: str | None,
    ) -> None:
        super().__init__(message, **kw)
        self.source = source
        self.target = target
        self.declared = declared


class BudgetExhausted(SwarmflowError):
    """A reservation did not fit the ledger or one of its ancestors."""

    def __init__(self, message: str, *, reason: str, ledger: str = "", **kw: str | None) -> None:
        super().__init__(message, **kw)
        self.reason = reason
        self.ledger = ledger


class ModelError(SwarmflowError):
    """The model endpoint failed."""

    retryable = False


class ModelAuthError(ModelError):
    """The endpoint rejected the credentials."""


class ModelNotFound(ModelError):
    """The endpoint does not serve the requested model."""


class ContextLengthExceeded(ModelError):
    """The request is longer than the model's context window."""


class ModelUnavailable(ModelError):
    """Rate limits, server errors or timeouts persisted through every retry."""

    retryable = True


class ModelResponseError(ModelError):
    """The endpoint answered with something that cannot be used."""


class ModelCallsBlocked(SwarmflowError):
    """A real model was called while real calls are blocked (the default in tests)."""


class ToolError(SwarmflowError):
    """A tool failed. The session shows the message to the model; the run goes on."""


class WorkspaceEscape(ToolError):
    """A tool path resolves outside the agent's workspace."""


class WorkspaceError(SwarmflowError):
    """A workspace could not be prepared, committed or cleaned up."""


class HumanError(SwarmflowError):
    """A human channel could not produce an answer."""


class HumanTimeout(HumanError):
    """Nobody answered in time and the policy says fail."""


class AgentFailed(SwarmflowError):
    """An agent session ended in the error state."""

    def __init__(self, message: str, *, reason: str, **kw: str | None) -> None:
        super().__init__(message, **kw)
        self.reason = reason


class RunPaused(SwarmflowError):
    """Control signal: a deferred human question paused the run; resume with the token."""

    def __init__(self, message: str, *, token: str, question: str, **kw: str | None) -> None:
        super().__init__(message, **kw)
        self.token = token
        self.question = question


class FlowFailed(SwarmflowError):
    """A run ended in failure. `.result` is its `RunResult`; the cause is chained."""

    def __init__(self, message: str, *, result: Any, **kw: str | None) -> None:
        super().__init__(message, **kw)
        self.result = result


_MISTAKES: tuple[type[BaseException], ...] = (
    ConfigError,
    TopologyError,
    IllegalTransition,
    ModelCallsBlocked,
)


def is_fault_of_the_world(exc: BaseException) -> bool:
    """Whether `exc` is a fault of the world (data) rather than a mistake (the run fails).

    Faults of the world: a model error after retries, a tool error, a budget or deadline stop
    (`BudgetExhausted`, or the `TimeoutError` of a deadline the flow set), a workspace that
    failed, a person who did not answer, and an agent whose session failed for any of these
    reasons or another the model's side raised. Everything else raised by the flow's own
    code is a mistake, and so is an agent that failed on one (an unknown tool, say).
    """
    if isinstance(exc, AgentFailed):
        return not isinstance(exc.__cause__, _MISTAKES)
    return isinstance(
        exc, BudgetExhausted | ModelError | ToolError | WorkspaceError | HumanError | TimeoutError
    )


class ResumeDiverged(ConfigError):
    """A resumed flow no longer matches its journal where `--strict` demands that it does."""
