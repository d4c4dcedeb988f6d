"""`compact`: drops failures and emptiness, never `False` or `0`, and records why."""

from __future__ import annotations

from pydantic import BaseModel

from swarmflow import Cancelled, Empty, Failed, Ok, Patch, compact
from swarmflow.testing import FunctionModel
from tests.runtime.helpers import of_type, run_one


class Score(BaseModel):
    value: int


async def test_keeps_false_and_zero_drops_empty_and_failures() -> None:
    outcomes = [
        Ok(False, 0),
        Ok(0, 1),
        Ok(None, 2),
        Ok("", 3),
        Ok("  ", 4),
        Failed(ValueError("x"), 5),
        Cancelled(6),
        Empty(7),
        Ok(Patch(diff=""), 8),
        Ok(Patch(diff="+x"), 9),
        Ok([], 10),
    ]

    async def body() -> list[object]:
        return compact(outcomes)

    result = await run_one([], body, FunctionModel(lambda r: ""))
    assert result.output[:2] == [False, 0]
    assert result.output[2] == Patch(diff="+x") and result.output[3] == []
    event = of_type(result, "outcomes_compacted")[0]
    assert event.kept == 4
    reasons = {d["index"]: d["reason"] for d in event.dropped}
    assert reasons[2] == "empty" and reasons[8] == "empty"
    assert reasons[5].startswith("failed: ValueError") and reasons[6].startswith("cancelled")


async def test_keep_predicate_and_model_validation() -> None:
    async def body() -> tuple[list[object], list[object]]:
        by_predicate = compact([Ok(1), Ok(2), Ok(3)], keep=lambda v: v % 2 == 1)
        by_model = compact([Ok({"value": 1}), Ok('{"value": 2}'), Ok({"value": "x"})], keep=Score)
        return by_predicate, by_model

    result = await run_one([], body, FunctionModel(lambda r: ""))
    odd, scores = result.output
    assert odd == [1, 3]
    assert scores == [Score(value=1), Score(value=2)]
    dropped = of_type(result, "outcomes_compacted")[1].dropped
    assert "not a valid Score" in dropped[0]["reason"]
