"""A settled model call's record reads back as the answer that was settled, whatever its text
holds: the record a resumed run replays is the answer the model gave."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmflow.calls.journal import note_finished, note_started, recorded_response
from swarmflow.core.messages import ModelResponse, ToolCall, Usage
from swarmflow.record.journal import Journal, read_journal

KEY = ("parallel[1]", "coder", "turn", "0" * 32)

ANSWERS = [
    ModelResponse("done", (), Usage(12, 3, 4), "stop", "m-1", None),
    ModelResponse(
        None,
        (ToolCall("c1", "read", '{"path": "a.py"}'), ToolCall("c2", "grep", "{}")),
        Usage(100, 20),
        "tool_calls",
        None,
        "json_schema",
    ),
    ModelResponse('quote " back\\slash \n line \u2028 \U0001f600', usage=Usage(1, 1)),
    ModelResponse("a lone surrogate \udcff stays one line", usage=Usage(2, 2)),
]


@pytest.mark.parametrize("answer", ANSWERS)
def test_a_settled_call_reads_back_as_its_answer(tmp_path: Path, answer: ModelResponse) -> None:
    path = tmp_path / "journal.jsonl"
    journal = Journal("run-1", path)
    note_finished(journal, note_started(journal, KEY), answer, 0.25, ("s-1", 3))
    journal.close()
    recorded = read_journal(path)
    [record] = recorded.model_calls[KEY]
    assert recorded.model_starts[KEY] == 1
    assert record.cost == 0.25
    assert (record.session, record.step) == ("s-1", 3)
    assert recorded_response(record) == answer
