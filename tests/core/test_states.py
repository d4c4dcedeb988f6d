"""The session state machine's checked transition table."""

import pytest

from swarmflow.core.errors import IllegalTransition
from swarmflow.core.states import (
    TRANSITIONS,
    EndReason,
    SessionState,
    check_transition,
    end_state_for,
    mermaid,
)

S = SessionState


def test_legal_transitions_pass() -> None:
    for src, dst in TRANSITIONS:
        check_transition(src, dst)


@pytest.mark.parametrize(
    ("src", "dst"),
    [(S.IDLE, S.CALLING_MODEL), (S.DONE, S.PRECHECK), (S.IDLE, S.WAITING), (S.STOPPED, S.ERROR)],
)
def test_illegal_transition_raises(src: SessionState, dst: SessionState) -> None:
    with pytest.raises(IllegalTransition, match=f"{src.value} -> {dst.value}"):
        check_transition(src, dst)


def test_escapes_from_any_live_state() -> None:
    for state in S:
        if not state.is_end:
            check_transition(state, S.ERROR)
            check_transition(state, S.STOPPED)


def test_end_reasons_map_to_end_states() -> None:
    assert end_state_for(EndReason.COMPLETED) is S.DONE
    assert end_state_for(EndReason.SUBMITTED) is S.DONE
    assert end_state_for(EndReason.ERROR) is S.ERROR
    for reason in (
        EndReason.BUDGET_EXCEEDED,
        EndReason.BUDGET_EXHAUSTED_BEFORE_CALL,
        EndReason.BUDGET_EXCEEDED_AFTER_CALL,
        EndReason.STEP_LIMIT,
        EndReason.LOOP_BLOCK,
        EndReason.CANCELLED,
        EndReason.WALL_CLOCK,
        EndReason.GOAL_BLOCKED,
        EndReason.GOAL_ROUND_LIMIT,
        EndReason.VETOED,
    ):
        assert end_state_for(reason) is S.STOPPED


def test_reason_strings_are_the_documented_ones() -> None:
    assert {r.value for r in EndReason} >= {
        "completed",
        "submitted",
        "budget exceeded",
        "budget exhausted before model call",
        "budget exceeded after model call",
        "step limit reached",
        "loop block limit reached",
        "cancelled",
        "wall clock",
        "goal blocked",
        "goal round limit reached",
        "vetoed by a rail",
    }


def test_mermaid_lists_every_transition() -> None:
    diagram = mermaid()
    for src, dst in TRANSITIONS:
        assert f"{src.value} --> {dst.value}" in diagram
