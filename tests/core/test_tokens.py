"""The one token estimator: units, the conservative prior, and learning from settled calls."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from swarmflow.core.messages import Message, ToolCall, ToolSpec
from swarmflow.core.tokens import (
    LEARNED_WINDOW,
    PRIOR_TOKENS_PER_UNIT,
    TokenEstimator,
    estimate_prompt,
    estimate_tokens,
    message_units,
    prompt_units,
    text_units,
)

CJK = st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=1)


def test_ascii_is_one_unit_a_character() -> None:
    assert text_units("hello world") == 11
    assert estimate_tokens("abc" * 10) == 10
    assert estimate_tokens("") == estimate_tokens(None) == 0


@given(CJK)
def test_cjk_is_counted_at_more_than_a_token_a_character(text: str) -> None:
    assert estimate_tokens(text) >= len(text)


@given(st.text())
def test_no_script_is_cheaper_than_ascii(text: str) -> None:
    assert text_units(text) >= len(text)


def test_a_prompt_counts_messages_tool_calls_and_schemas() -> None:
    call = ToolCall("c1", "read_file", '{"path": "a"}')
    messages = [Message("user", "hi"), Message("assistant", None, (call,))]
    spec = ToolSpec("read_file", "Read a file.", {"type": "object"})
    bare = prompt_units(messages)
    assert bare == sum(message_units(m) for m in messages)
    assert prompt_units(messages, [spec]) > bare
    assert estimate_prompt(messages, [spec]) * 3 >= prompt_units(messages, [spec])


def test_the_prior_holds_until_a_call_settles() -> None:
    estimator = TokenEstimator()
    assert estimator.rate("m") == PRIOR_TOKENS_PER_UNIT
    assert estimator.tokens(300, "m") == 100


def test_learning_follows_the_model_and_keeps_the_largest_recent_rate() -> None:
    estimator = TokenEstimator()
    estimator.learn("m", 1_000, 500)
    assert estimator.tokens(1_000, "m") == 500
    assert estimator.rate("other") == PRIOR_TOKENS_PER_UNIT
    estimator.learn("m", 1_000, 250)
    assert estimator.tokens(1_000, "m") == 500  # errs high while the high rate is recent
    for _ in range(LEARNED_WINDOW):
        estimator.learn("m", 1_000, 250)
    assert estimator.tokens(1_000, "m") == 250


def test_calls_without_reported_usage_teach_nothing() -> None:
    estimator = TokenEstimator()
    estimator.learn("m", 1_000, 0)
    estimator.learn("m", 0, 10)
    assert estimator.rate("m") == PRIOR_TOKENS_PER_UNIT


@settings(max_examples=50)
@given(
    factor=st.floats(min_value=0.2, max_value=3.0),
    sizes=st.lists(st.integers(100, 50_000), min_size=2, max_size=10),
)
def test_after_one_settled_call_a_steady_tokenizer_is_estimated_to_its_rounding(
    factor: float, sizes: list[int]
) -> None:
    """A server that counts `factor` tokens a unit (rounded): the first estimate may be far
    off; every later one is off by no more than the servers' rounding, scaled up."""
    estimator = TokenEstimator()
    seen: list[int] = []
    for units in sizes:
        real = round(units * factor)
        estimate = estimator.tokens(units, "m")
        if seen:
            assert abs(estimate - real) <= 1.5 + 0.5 * units / min(seen)
        estimator.learn("m", units, real)
        seen.append(units)
