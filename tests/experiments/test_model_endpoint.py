"""`experiment run --model NAME`: every arm on one model of an OpenAI-compatible endpoint, here
a real chat-completions server on loopback that never fixes anything."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from swarmflow.cli import main
from tests.support.chat_server import ChatServer, Reply, completion

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = f"{ROOT}/examples/experiments/experiment.py:EXPERIMENT"


def _answer(body: dict[str, Any]) -> Reply:
    return completion("I looked, and I will leave the code as it is.")


def test_every_arm_runs_on_the_named_model_of_the_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ChatServer() as server:
        server.responder = _answer
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-experiment-0123456789")
        monkeypatch.setenv("SWARMFLOW_BLOCK_MODEL_CALLS", "0")
        out = tmp_path / "exp"
        argv = ["experiment", "run", EXAMPLE, "--model", "gpt-endpoint", "--out", str(out),
                "--tasks", "1", "--repeats", "1"]  # fmt: skip
        assert main(argv) == 0
    assert not server.errors
    models = {json.loads(r.raw)["model"] for r in server.requests if r.raw}
    assert models == {"gpt-endpoint"}
    with (out / "rows.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert sorted(r["arm"] for r in rows) == ["single", "team-mandatory", "team-optional",
                                              "workflow"]  # fmt: skip
    for row in rows:
        assert row["model"] == "gpt-endpoint" and int(row["tokens"]) > 0, row
        assert row["resolved"] == "False"  # nothing was changed, so the failing test still fails
    calls = sum(int(r["calls"]) for r in rows)
    assert calls == len([r for r in server.requests if r.raw])  # every call is in a row
