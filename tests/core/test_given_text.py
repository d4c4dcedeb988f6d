"""What a session was given, read a message at a time: a run the agent echoes is cut out of
its product wherever it lies in the given text, across the seams between messages too."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from swarmflow.core.fingerprint import MATCH_CHARS, FingerprintIndex, GivenText

TASK = "please implement the subtract function in the calculator module today"
OWN = "and I also renamed helper_value_cache_size along the way"


def _never(owner: str) -> bool:
    return False


@settings(max_examples=100, deadline=None)
@given(cuts=st.lists(st.integers(0, len(TASK)), max_size=6), before=st.integers(0, 30))
def test_an_echo_split_over_many_messages_is_still_cut(cuts: list[int], before: int) -> None:
    given = GivenText()
    for i in range(before):  # earlier messages the agent was given
        given.extend(f"message {i}: unrelated text number {i * 7919}")
    bounds = [0, *sorted(cuts), len(TASK)]
    for start, end in zip(bounds, bounds[1:], strict=False):
        given.extend(TASK[start:end])
    index = FingerprintIndex()
    index.add("coder", f"Sure: {TASK} {OWN}", given=given)
    assert index.unreached(f"Task: {TASK}", _never) == []
    assert index.unreached(f"look: {OWN}", _never) == ["coder"]


def test_text_arriving_after_a_check_is_read_too() -> None:
    given = GivenText.of("first message of the conversation, long enough to index")
    index = FingerprintIndex()
    index.add("coder", "an answer of its own words only, nothing echoed here", given=given)
    given.extend(TASK)
    index.add("coder", f"{TASK}!", given=given)
    assert index.unreached(TASK, _never) == []


def test_a_short_given_text_cuts_nothing() -> None:
    given = GivenText.of("x" * (MATCH_CHARS - 1))
    index = FingerprintIndex()
    index.add("coder", "x" * 40, given=given)
    assert index.unreached("x" * 40, _never) == ["coder"]
