"""A batch's results are scrubbed of secrets as its runs' logs are: the environment's secret
values and the model's own, in every line's output, error and input, and in what it prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swarmflow import Agent, Team, agent, flow
from swarmflow.batches import batch
from swarmflow.cli import main
from swarmflow.core.messages import ModelRequest
from swarmflow.core.secrets import REDACTED
from swarmflow.testing import FunctionModel
from tests.dsl.helpers import flow_text

ENV_SECRET = "tok-" + "s3cr3tvalue" * 3
MODEL_SECRET = "sk-model-" + "k3y" * 6


class KeyedModel(FunctionModel):
    """A function model that holds a key of its own, as an endpoint's model does."""

    def secrets(self) -> list[str]:
        return [MODEL_SECRET]


def echoing(req: ModelRequest) -> str:
    """Repeats what it was asked, and blurts out both secrets."""
    return f"you said {req.prompt}; my keys are {ENV_SECRET} and {MODEL_SECRET}"


@flow(team=Team([Agent("w")]))
async def echo(note: str, fail: bool = False) -> str:
    text = (await agent("w", note)).text
    if fail:
        raise ValueError(f"failed after hearing {text}")
    return text


@pytest.fixture(autouse=True)
def _secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_TOKEN", ENV_SECRET)


@pytest.mark.anyio
async def test_results_jsonl_never_holds_a_secret_the_model_echoed(tmp_path: Path) -> None:
    tasks = [{"note": "hello"}, {"note": f"use {ENV_SECRET}", "fail": True}]
    result = await batch(echo, tasks, out=tmp_path, model=KeyedModel(echoing))
    raw = (tmp_path / "results.jsonl").read_text()
    assert ENV_SECRET not in raw and MODEL_SECRET not in raw
    rows = {r["task"]: r for r in map(json.loads, raw.splitlines())}
    ok, failed = rows["task-000001"], rows["task-000002"]
    assert ok["output"] == f"you said hello; my keys are {REDACTED} and {REDACTED}"
    assert failed["input"] == {"note": f"use {REDACTED}", "fail": True}
    assert failed["error"].count(REDACTED) == 3 and "ValueError" in failed["error"]
    # What the batch returns is what it wrote; its summary too is clean.
    assert [r.output for r in result.results][0] == ok["output"]
    assert ENV_SECRET not in result.summary() and MODEL_SECRET not in result.summary()
    # The scrubbed input still matches the task list it came from: a re-run skips the task.
    again = await batch(echo, tasks, out=tmp_path, model=KeyedModel(echoing))
    assert again.progress.skipped == 2
    assert (tmp_path / "results.jsonl").read_text() == raw


def test_what_the_command_prints_is_scrubbed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    swarm, tasks, out = tmp_path / "one.swarm", tmp_path / "tasks.jsonl", tmp_path / "out"
    swarm.write_text(flow_text("  x = a(task)\n  return x.text"))
    tasks.write_text(json.dumps({"task": f"job {ENV_SECRET}"}) + "\n")
    argv = ["batch", str(swarm), "--inputs", str(tasks), "--out", str(out), "--demo"]
    assert main(argv) == 0
    assert ENV_SECRET not in (out / "results.jsonl").read_text()
    tasks.write_text(json.dumps({"task": f"other job {ENV_SECRET}"}) + "\n")
    assert main(argv) == 2  # a changed task list is refused, naming both inputs
    printed = capsys.readouterr()
    assert "records task-000001 with input" in printed.err
    assert ENV_SECRET not in printed.out + printed.err and REDACTED in printed.err
