"""The `.swarm` agent block's `harness` field: a command line, or a `use`d Harness."""

from __future__ import annotations

from pathlib import Path

from swarmflow import run_sync
from swarmflow.dsl import check_source, load_source
from swarmflow.testing import FunctionModel
from tests.harnesses.kill_target import coder_answer
from tests.harnesses.support import of_type
from tests.support.git_repo import make_repo

FLOW = """flow fix(task: str) -> str

use CODER from tests.harnesses.programs

agent coder { workspace worktree  harness CODER }
agent reviewer {}

edges coder -> reviewer

steps {
  made = coder(task)
  review = reviewer(made)
  return "{made.text} / {review.text}"
}
"""


def test_a_swarm_flow_runs_a_used_harness_as_its_coder(tmp_path: Path) -> None:
    fix = load_source(FLOW)
    assert fix.team.get("coder").harness is not None
    answer = lambda r: coder_answer(r) if r.agent == "coder" else "approve"  # noqa: E731
    result = run_sync(fix, task="make answer() return 42", model=FunctionModel(answer),
                      repo=make_repo(tmp_path))  # fmt: skip
    assert result.status == "ok" and result.output == "answer() returns 42 / approve"
    assert [e.harness for e in of_type(result, "harness_started")] == ["fake-coder"]


def test_a_command_line_harness_is_split_into_its_arguments() -> None:
    source = FLOW.replace("harness CODER", 'harness "my-agent --yolo --task {task}"')
    assert load_source(source).team.get("coder").harness.command == (
        "my-agent", "--yolo", "--task", "{task}"
    )  # fmt: skip


def test_each_mistake_in_a_harness_field_is_one_located_error() -> None:
    source = FLOW.replace(
        "agent reviewer {}",
        'agent reviewer { harness "prog {taks}" }\n'
        "agent tester { workspace worktree  harness nothing }",
    )
    errors = [d.header() for d in check_source(source) if d.is_error]
    assert errors == [
        "<string>:6:7: error: agent 'reviewer' runs a harness, which works in a workspace: "
        "add `workspace worktree` (or local, shared)",
        "<string>:6:26: error: harness command: command holds unknown placeholder {taks}; "
        "known: {answer_file}, {base_url}, {model}, {task}, {task_file}",
        "<string>:7:44: error: harness 'nothing' is not imported; `use` it (for example `use "
        "mini_swe_agent from swarmflow.harnesses.templates`) or give a command line",
    ]
