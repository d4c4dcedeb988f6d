"""The `rubric` grader's judge, budgeted apart; and the command line's one-line errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest

from swarmflow import Agent, Team, agent, flow
from swarmflow.cli import main
from swarmflow.experiments import Arm, Experiment, RubricGrader, read_experiment, run_experiment
from swarmflow.testing import FunctionModel
from tests.experiments.conftest import write_tasks


@flow(team=Team([Agent("answerer")]))
async def answer(question: str) -> str:
    out = await agent("answerer", question)
    return out.text


def _answerer(text: str) -> FunctionModel:
    return FunctionModel(lambda request: text, name="answer-scripted")


def rubric_and_answer(prompt: str) -> tuple[list[str], str]:
    """What a judge reads in its prompt: the numbered rubric lines, and the quoted answer."""
    lines = prompt.splitlines()
    items = [m.group(1) for m in map(re.compile(r"^\d+\. (.*)$").match, lines) if m]
    begin = next(i for i, line in enumerate(lines) if line.startswith("BEGIN ANSWER "))
    return items, json.loads(lines[begin + 1])


def _judge() -> FunctionModel:
    """Passes an item when the answer (in the judge's prompt) holds the item's first word."""

    def policy(request: object) -> str:
        items, answer = rubric_and_answer(request.prompt)  # type: ignore[attr-defined]
        return json.dumps({"passed": [item.split()[0] in answer for item in items]})

    return FunctionModel(policy, name="judge-scripted")


def test_the_judge_grades_every_item_in_runs_of_its_own(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", [
        {"id": "q1", "inputs": {"question": "what is it?"}, "rubric": ["alpha named", "beta named"]},
    ])  # fmt: skip
    experiment = Experiment(
        name="rubric", tasks=tasks, grader=RubricGrader(run_budget={"tokens": 50_000}),
        judge_demo=_judge, arms=[
            Arm(name="both", flow=answer, demo=lambda: _answerer("alpha and beta"), reference=True),
            Arm(name="half", flow=answer, demo=lambda: _answerer("only alpha")),
        ],
    )  # fmt: skip
    out = tmp_path / "out"
    anyio.run(lambda: run_experiment(experiment, out=out, demo=True))
    report = read_experiment(out)
    arms = {a.name: a for a in report.arms}
    assert (arms["both"].passed.k, arms["both"].rubric_rate) == (1, 1.0)
    assert (arms["half"].passed.k, arms["half"].rubric_rate) == (0, 0.5)
    both = arms["both"].rows[0]
    assert both.judge_tokens > 0  # recorded apart from the arm's own spend
    judge_runs = sorted(p.name for p in (out / "judge").iterdir())
    assert judge_runs == ["both-q1-r1", "half-q1-r1"]
    judged = (out / "judge/both-q1-r1/events.jsonl").read_text()
    arm_run = Path(both.run_dir, "events.jsonl").read_text()
    assert '"agent":"judge"' in judged.replace(" ", "") and "judge" not in arm_run
    assert '"purpose":"judge"' in judged.replace(" ", "")  # the judge's calls say what for
    assert "rubric 100.0%" in report.text()


def _error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_mistakes_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    declared = tmp_path / "declared.py"
    declared.write_text(
        "from swarmflow import flow\nfrom swarmflow.experiments import *\n"
        "@flow\nasync def f(x: int) -> int:\n    return x\n"
        f"BAD_TASKS = Experiment(name='e', tasks={str(tmp_path / 'tasks.jsonl')!r}, "
        "grader=FunctionGrader(fn=lambda t, r: True), arms=[Arm(name='a', flow=f, "
        "reference=True)])\nNOT_ONE = 3\n"
    )
    (tmp_path / "tasks.jsonl").write_text('{"id": "ok"}\n{"id": "no good"}\n')
    run = ["experiment", "run"]
    assert "tasks.jsonl:2: id" in _error([*run, f"{declared}:BAD_TASKS", "--demo",
                                          "--out", str(tmp_path / "o")], capsys)  # fmt: skip
    assert "an int, not an Experiment" in _error([*run, f"{declared}:NOT_ONE", "--demo"], capsys)
    assert "defines no 'MISSING'" in _error([*run, f"{declared}:MISSING", "--demo"], capsys)
    (tmp_path / "tasks.jsonl").write_text('{"id": "ok", "inputs": {"x": 1}}\n')
    assert "no scripted policy" in _error([*run, f"{declared}:BAD_TASKS", "--demo",
                                           "--out", str(tmp_path / "o")], capsys)  # fmt: skip
    assert "names no model" in _error([*run, f"{declared}:BAD_TASKS", "--out",
                                       str(tmp_path / "o")], capsys)  # fmt: skip
    assert "on='nowhere'" in _error([*run, f"{declared}:BAD_TASKS", "--demo", "--on", "nowhere",
                                     "--out", str(tmp_path / "o")], capsys)  # fmt: skip
    assert "not an experiment directory" in _error(["experiment", "report", str(tmp_path)], capsys)
    (tmp_path / "forged").mkdir()
    (tmp_path / "forged/experiment.json").write_text('{"schema": 1, "name": 3, "arms": "x"}')
    assert "experiment.json" in _error(["experiment", "report", str(tmp_path / "forged")], capsys)
