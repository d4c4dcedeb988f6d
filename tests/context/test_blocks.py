"""The block rule: where a compaction cuts and how far it reduces (docs/context.md)."""

from __future__ import annotations

from swarmflow.context.blocks import plan
from swarmflow.context.history import SUMMARY_HEAD
from swarmflow.core.context_policy import ContextPolicy
from swarmflow.core.messages import Message, ToolCall
from swarmflow.core.tokens import message_units


def _history(turns: int, size: int = 400) -> list[Message]:
    out = [Message("user", "the task")]
    for i in range(turns):
        out.append(Message("assistant", f"step {i}", (ToolCall(f"c{i}", "read_file", "{}"),)))
        out.append(Message("tool", "x" * size, tool_call_id=f"c{i}", name="read_file"))
    return out


def test_the_head_ends_where_a_turn_starts_and_fits_under_the_low_watermark() -> None:
    history = _history(60)
    policy = ContextPolicy()
    room = sum(message_units(m) for m in history)
    block = plan(history, room, policy)
    assert block.keep > 1 and history[block.keep].role == "assistant"
    assert block.kept_units == sum(message_units(m) for m in history[: block.keep])
    assert block.kept_units + block.rewrite <= block.target
    assert room * policy.low <= block.target <= room * policy.high - 2 * block.growth


def test_faster_growth_makes_a_larger_block_and_low_is_the_floor() -> None:
    room = 40_000
    slow, fast = plan(_history(40, 100), room, ContextPolicy()), plan(
        _history(40, 1_000), room, ContextPolicy()
    )
    assert fast.growth > slow.growth and fast.target < slow.target
    tight = plan(_history(40, 1_000), room, ContextPolicy(low=0.85))
    assert tight.target == int(room * 0.85)


def test_the_last_note_measures_what_a_compaction_rewrites() -> None:
    note = Message("user", f"{SUMMARY_HEAD}\n" + "decided things " * 40)
    history = [*_history(10), note, *_history(10)[1:]]
    assert plan(history, 20_000, ContextPolicy()).rewrite == message_units(note)
