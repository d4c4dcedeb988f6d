"""A real mini-swe-agent as the coder of a coder -> reviewer flow, offline: its model calls
served by a scripted policy through the metering endpoint, in its own worktree: sandboxed
where bubblewrap works, on the host (and the run says so) where it does not."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from swarmflow import Agent, Team, agent, flow, run_sync
from swarmflow.core.messages import ModelRequest, ToolCall
from swarmflow.harnesses import mini_swe_agent
from swarmflow.testing import FunctionModel, tool_call
from swarmflow.tools.sandbox import bwrap_problem
from tests.harnesses.support import of_type
from tests.support.git_repo import make_repo

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("minisweagent") is None,
    reason="mini-swe-agent is not installed (pip install 'swarmflow[harness]')",
)

PROBLEM = bwrap_problem()
TEAM = Team(
    [
        Agent("coder", workspace="worktree", harness=mini_swe_agent(), allowance=50_000),
        Agent("reviewer", tools=["run_shell"]),
    ],
    edges=[("coder", "reviewer")],
)
CHECK = "python -c 'import app; assert app.answer() == 42; print(\"tests pass\")'"


@flow(team=TEAM)
async def code_and_review(task: str) -> dict[str, str]:
    candidate = await agent("coder", task)
    assert candidate.patch is not None
    review = await agent(
        "reviewer", f"Review this patch:\n{candidate.patch.diff}", workspace=candidate
    )
    return {"answer": candidate.text, "diff": candidate.patch.diff, "review": review.text}


def policy(request: ModelRequest) -> str | ToolCall:
    done = [m for m in request.messages if m.role == "tool"]
    if request.agent == "coder":
        assert [t.name for t in request.tools] == ["bash"]  # mini's own tool, passed through
        if not done:
            return tool_call("bash", command="sed -i 's/return 41/return 42/' app.py && cat app.py")
        return tool_call(
            "bash",
            command="printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\nanswer() returns 42\\n'",
        )
    if not done:
        assert "+    return 42" in request.prompt  # the patch reached it along coder -> reviewer
        return tool_call("run_shell", command=CHECK)
    assert "tests pass" in (done[-1].content or "")
    return "approve: the tests pass"


def test_mini_swe_agent_codes_in_its_worktree_and_a_native_reviewer_reviews(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path)
    result = run_sync(
        code_and_review, task="make answer() return 42", model=FunctionModel(policy), repo=repo
    )
    assert result.status == "ok", result.error
    assert result.output["answer"] == "answer() returns 42"  # its submission is the answer
    assert "-    return 41\n+    return 42" in result.output["diff"]
    assert result.output["review"] == "approve: the tests pass"
    assert (repo / "app.py").read_text() == "def answer():\n    return 41\n"  # in its worktree
    (started,) = of_type(result, "harness_started")
    # Sandboxed where bubblewrap works; on the host (said once in the log) where it does not.
    assert started.harness == "mini-swe-agent" and started.sandboxed == (PROBLEM is None)
    assert bool(of_type(result, "sandbox_unavailable")) == (PROBLEM is not None)
    (ended,) = of_type(result, "harness_ended")
    assert (ended.reason, ended.exit_code, ended.calls) == ("completed", 0, 2)
    calls = [e for e in of_type(result, "model_called") if e.agent == "coder"]
    assert len(calls) == 2 and all(c.request_shape["tools"] == ["bash"] for c in calls)
    spent = sum(c.tokens_in + c.tokens_out for c in calls)
    assert result.usage["coder"].tokens_in + result.usage["coder"].tokens_out == spent > 0
    (finished,) = of_type(result, "run_finished")
    reviewer = result.usage["reviewer"]
    assert finished.tokens == spent + reviewer.tokens_in + reviewer.tokens_out
