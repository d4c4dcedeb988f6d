"""The flagship's `.swarm` twin runs the same work for real: worktrees, pytest, a patch."""

from __future__ import annotations

from pathlib import Path

import anyio

from swarmflow import RunResult, run
from swarmflow.dsl import check_file, load_flow
from swarmflow.flows import DEMO_TASK, FixResult, create_target, demo_model
from swarmflow.flows.target_repo import default_test_command
from tests.flows.test_parallel_coder_arbiter import git, suite_passes

TWIN = Path(__file__).resolve().parents[2] / "examples" / "parallel_coder_arbiter" / "flow.swarm"


def test_the_twin_checks_clean() -> None:
    assert check_file(str(TWIN)) == []


def test_the_twin_fixes_the_demo_repository(tmp_path: Path) -> None:
    async def go() -> tuple[RunResult, Path]:
        target = await create_target(tmp_path / "target")
        flow = load_flow(str(TWIN))
        result = await run(
            flow,
            model=demo_model(),
            repo=target,
            human=[],
            runs_root=tmp_path / "runs",
            task=DEMO_TASK,
            target=str(target),
            test_command=default_test_command(),
        )
        return result, target

    result, target = anyio.run(go)
    assert result.status == "ok", result.error
    fixed: FixResult = result.output
    assert (fixed.chosen, fixed.decided_by) == (0, "arbiter")
    assert fixed.output_branch and suite_passes(target, fixed.output_branch, tmp_path / "clone")
    assert "worktrees" not in git(target, "worktree", "list")  # removed at the end of the run
    kinds = [e.type for e in result.events]
    assert kinds.count("workspace_changed") == 2  # the two coders' commits
    assert kinds.count("patch_applied") == 1
    assert kinds[-1] == "run_finished"
