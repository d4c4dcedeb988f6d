"""The session state machine: states, end reasons and the checked transition table."""

from __future__ import annotations

from enum import StrEnum

from swarmflow.core.errors import IllegalTransition


class SessionState(StrEnum):
    """Where a session is in its turn."""

    IDLE = "idle"
    PRECHECK = "precheck"
    CALLING_MODEL = "calling_model"
    RUNNING_TOOLS = "running_tools"
    WAITING = "waiting"
    DONE = "done"
    STOPPED = "stopped"
    ERROR = "error"

    @property
    def is_end(self) -> bool:
        return self in END_STATES


END_STATES = frozenset({SessionState.DONE, SessionState.STOPPED, SessionState.ERROR})


class EndReason(StrEnum):
    """Why a session ended. DONE takes the first two; STOPPED the rest; ERROR takes `error`."""

    COMPLETED = "completed"
    SUBMITTED = "submitted"
    BUDGET_EXCEEDED = "budget exceeded"
    BUDGET_EXHAUSTED_BEFORE_CALL = "budget exhausted before model call"
    BUDGET_EXCEEDED_AFTER_CALL = "budget exceeded after model call"
    STEP_LIMIT = "step limit reached"
    LOOP_BLOCK = "loop block limit reached"
    CANCELLED = "cancelled"
    WALL_CLOCK = "wall clock"
    GOAL_BLOCKED = "goal blocked"
    GOAL_ROUND_LIMIT = "goal round limit reached"
    VETOED = "vetoed by a rail"
    ERROR = "error"


DONE_REASONS = frozenset({EndReason.COMPLETED, EndReason.SUBMITTED})
BUDGET_REASONS = frozenset(
    {
        EndReason.BUDGET_EXCEEDED,
        EndReason.BUDGET_EXHAUSTED_BEFORE_CALL,
        EndReason.BUDGET_EXCEEDED_AFTER_CALL,
    }
)
"""The token allowance refused more work (EndReason is a str, so event strings match too)."""
EXHAUSTED_REASONS = BUDGET_REASONS | {EndReason.WALL_CLOCK}
"""Reasons a call raises BudgetExhausted for: the token allowance or the time ran out."""

_S = SessionState
TRANSITIONS: frozenset[tuple[SessionState, SessionState]] = frozenset(
    {
        (_S.IDLE, _S.PRECHECK),
        (_S.IDLE, _S.DONE),  # closed before any turn
        (_S.IDLE, _S.STOPPED),  # a turn_start rail vetoed the turn
        (_S.PRECHECK, _S.CALLING_MODEL),
        (_S.PRECHECK, _S.STOPPED),
        (_S.CALLING_MODEL, _S.RUNNING_TOOLS),
        (_S.CALLING_MODEL, _S.DONE),
        (_S.CALLING_MODEL, _S.STOPPED),
        (_S.CALLING_MODEL, _S.PRECHECK),  # a goal evaluator asked for another round
        (_S.RUNNING_TOOLS, _S.PRECHECK),
        (_S.RUNNING_TOOLS, _S.DONE),
        (_S.RUNNING_TOOLS, _S.STOPPED),
        (_S.RUNNING_TOOLS, _S.WAITING),
        (_S.WAITING, _S.RUNNING_TOOLS),
        (_S.DONE, _S.IDLE),
        (_S.STOPPED, _S.IDLE),
        (_S.ERROR, _S.IDLE),
    }
)
"""The legal transitions. Two escapes bypass the table from any live state: an unhandled
fault goes to ERROR and a cancellation from outside goes to STOPPED."""


def check_transition(current: SessionState, target: SessionState) -> None:
    """Raise `IllegalTransition` unless `current -> target` is legal (escapes included)."""
    if (current, target) in TRANSITIONS:
        return
    if target in (_S.ERROR, _S.STOPPED) and not current.is_end:
        return
    raise IllegalTransition(f"illegal session transition {current.value} -> {target.value}")


def end_state_for(reason: EndReason) -> SessionState:
    """The end state that records `reason`."""
    if reason in DONE_REASONS:
        return _S.DONE
    if reason is EndReason.ERROR:
        return _S.ERROR
    return _S.STOPPED


def mermaid() -> str:
    """The transition table as a Mermaid state diagram (the docs render this)."""
    lines = ["stateDiagram-v2", "    [*] --> idle"]
    for src, dst in sorted(TRANSITIONS, key=lambda t: (t[0].value, t[1].value)):
        lines.append(f"    {src.value} --> {dst.value}")
    lines.append("    note right of error: any live state --> error (fault), --> stopped (cancel)")
    return "\n".join(lines)
