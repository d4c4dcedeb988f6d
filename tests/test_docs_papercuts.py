"""What a new user trips over in the first hour, each fixed and kept fixed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from swarmflow import Agent, FlowFailed, Team, agent, flow, run_sync
from swarmflow.cli import main
from swarmflow.testing import FunctionModel

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")

LIST_FLOW = """flow many(task: str) -> list
agent w {}
steps {
  drafts = compact(parallel(2) |i| { w("draft {i} of {task}") })
  return drafts
}
"""


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SWARMFLOW_RUNS", str(tmp_path / "runs"))
    return tmp_path / "runs"


def test_run_prints_a_list_of_agent_outputs_as_text(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "many.swarm"
    path.write_text(LIST_FLOW)
    assert main(["run", str(path), "--demo", "--input", "task=notes"]) == 0
    out = capsys.readouterr().out
    assert "AgentOutput(" not in out and "Ok(" not in out
    assert (
        "output:\n  - [demo w] Done: draft 0 of notes\n  - [demo w] Done: draft 1 of notes\n" in out
    )


def test_run_json_prints_one_json_object(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "many.swarm"
    path.write_text(LIST_FLOW)
    assert main(["run", str(path), "--demo", "--json", "--input", "task=notes"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "ok" and report["error"] is None
    assert report["output"] == [
        "[demo w] Done: draft 0 of notes",
        "[demo w] Done: draft 1 of notes",
    ]
    assert Path(report["events"]).is_file() and report["tokens"] > 0


def test_structured_output_prints_as_json(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "route.swarm"
    path.write_text((ROOT / "examples" / "route_report.swarm").read_text())
    (tmp_path / "swarm_examples.py").write_text(
        (ROOT / "examples" / "swarm_examples.py").read_text()
    )
    text = (
        path.read_text()
        .replace("return str(answer)", "return triage")
        .replace("-> str", "-> Triage")
    )
    path.write_text(text)
    assert main(["run", str(path), "--demo", "--input", "report=crash"]) == 0
    out = capsys.readouterr().out
    assert 'output: {"route": "fix", "reason": ""}' in out


def test_the_sign_off_example_asks_a_person_under_demo(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example = str(ROOT / "examples" / "sign_off.swarm")
    assert main(["run", example, "--demo", "--input", "changes=faster start-up"]) == 0
    out = capsys.readouterr().out
    # the demo person approves, answering with the payload it was shown: the draft
    assert "output: [demo writer] Done: Write release notes for these changes:" in out
    log = Path(out.split("events: ")[1].strip()).read_text()
    events = [json.loads(line) for line in log.splitlines()]
    asked = [e for e in events if e["type"] == "human_requested"]
    assert len(asked) == 1 and "Publish these release notes?" in asked[0]["question"]


def test_the_sign_off_example_pauses_with_defer_and_resumes(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example = str(ROOT / "examples" / "sign_off.swarm")
    assert main(["run", example, "--demo", "--defer", "--input", "changes=faster start-up"]) == 1
    out = capsys.readouterr().out
    assert "status: paused" in out
    command = re.search(r"resume: swarmflow resume (\S+) --answer (\S+)=VALUE", out)
    assert command is not None, out
    run_dir, token = command.groups()
    assert main(["resume", run_dir, "--demo", "--answer", f"{token}=ship it"]) == 0
    resumed = capsys.readouterr().out
    assert "status: ok" in resumed and "output: ship it" in resumed


def test_a_misspelled_agent_in_python_gets_a_did_you_mean(tmp_path: Path) -> None:
    team = Team([Agent("reviewer"), Agent("writer")], edges=[("writer", "reviewer")])

    @flow(team=team)
    async def typo(task: str) -> str:
        return (await agent("reviwer", task)).text

    with pytest.raises(FlowFailed) as failed:
        run_sync(typo, task="x", model=FunctionModel(lambda r: "ok"), runs_root=tmp_path)
    assert "did you mean 'reviewer'" in str(failed.value.__cause__ or failed.value)


def test_the_readme_says_how_to_reach_the_command() -> None:
    assert ".venv/bin/swarmflow" in README and "source .venv/bin/activate" in README


def test_the_readme_says_what_make_run_installs() -> None:
    makefile = (ROOT / "Makefile").read_text()
    installs = re.search(r"pip install -q -e '\.\[([\w,]+)\]'", makefile)
    assert installs is not None
    for extra in installs.group(1).split(","):
        assert f"`{extra}`" in README, f"README does not say make run installs the {extra} extra"


def test_the_documented_channel_import_works() -> None:
    line = "from swarmflow.channels import ConsoleHuman, DeferredHuman, NoHuman, ScriptedHuman"
    assert line in README
    exec(line, {})
