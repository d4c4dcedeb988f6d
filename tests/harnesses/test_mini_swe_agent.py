"""A real mini-swe-agent as the coder of a coder -> reviewer flow, offline: its model calls
served by a scripted policy through the metering endpoint, in its own worktree: sandboxed
where bubblewrap works, on the host (and the run says so) where it does not."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from swarmflow import Agent, Team, agent, flow, run_sync
from swarmflow.core.messages import ModelRequest, ModelResponse, ToolCall
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


def test_its_bash_commands_and_their_outputs_are_in_its_transcript(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    result = run_sync(
        code_and_review, task="make answer() return 42", model=FunctionModel(policy), repo=repo
    )
    assert result.status == "ok", result.error
    steps = of_type(result, "harness_tool_executed")
    assert [(s.tool, s.harness, s.agent, s.step) for s in steps] == [
        ("bash", "mini-swe-agent", "coder", 1),
        ("bash", "mini-swe-agent", "coder", 2),
    ]
    first, last = steps
    assert first.arguments == {"command": "sed -i 's/return 41/return 42/' app.py && cat app.py"}
    assert first.fed_back and "return 42" in first.result  # the output mini fed back
    assert (
        not last.fed_back and "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in last.arguments["command"]
    )
    from swarmflow.view.transcript import transcripts

    (coder,) = {s.session for s in steps}
    parts = transcripts(result.events, None)[coder]
    titles = [p.title for p in parts]
    assert any(t.startswith("bash(") and "run by mini-swe-agent" in t for t in titles)
    assert any(p.kind == "result" and "return 42" in p.body for p in parts)


def _repeating(request: ModelRequest) -> str | ToolCall:
    if request.agent == "coder":  # the same command, whatever it printed: a loop
        return tool_call("bash", command="echo truncate_number")
    return "approve"


def test_a_harness_that_repeats_one_command_is_stopped_by_the_loop_block(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path)
    model = FunctionModel(_repeating)
    result = run_sync(code_and_review, task="loop", model=model, repo=repo, raise_on_failure=False)
    coder_calls = [r for r in model.requests if r.agent == "coder"]
    assert len(coder_calls) == 3  # the fourth request, which brought the third repeat, was refused
    (refused,) = [e for e in of_type(result, "harness_refused") if e.kind == "loop_block"]
    assert refused.status == 429 and "bash called 3 times" in refused.reason
    (ended,) = [e for e in of_type(result, "session_ended") if e.agent == "coder"]
    assert ended.reason == "loop block limit reached"
    steps = of_type(result, "harness_tool_executed")
    assert len(steps) == 3 and all("truncate_number" in s.result for s in steps)


def test_its_html_report_names_the_harness_and_measures_adherence(tmp_path: Path) -> None:
    from swarmflow.report import read_log
    from swarmflow.report.html import render_html

    repo = make_repo(tmp_path)
    result = run_sync(
        code_and_review, task="make answer() return 42", model=FunctionModel(policy), repo=repo
    )
    page = render_html(read_log(result.run_dir))
    assert "coder <i>(harness: mini-swe-agent)</i>" in page
    assert 'id="adherence"' in page and "Adherent to the declared organization" in page
    assert "bash (run by mini-swe-agent)" in page  # its steps on the timeline


SECRET = "sk-harness-9f8e7d6c5b4a39281706"


def _saying(request: ModelRequest) -> ModelResponse | str:
    if request.agent != "coder":
        return "approve"
    done = [m for m in request.messages if m.role == "tool"]
    command = (
        "sed -i 's/return 41/return 42/' app.py"
        if not done
        else "printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\ndone\\n'"
    )
    said = f"THOUGHT: step {len(done) + 1}, with the key {SECRET} in mind"
    return ModelResponse(text=said, tool_calls=(tool_call("bash", command=command),))


def test_what_its_model_said_at_each_step_is_in_its_transcript_scrubbed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_TEST_API_KEY", SECRET)
    repo = make_repo(tmp_path)
    result = run_sync(code_and_review, task="fix", model=FunctionModel(_saying), repo=repo)
    assert result.status == "ok", result.error
    said = of_type(result, "harness_answered")
    assert [(s.harness, s.agent, s.step, s.tool_calls) for s in said] == [
        ("mini-swe-agent", "coder", 1, ["bash"]),
        ("mini-swe-agent", "coder", 2, ["bash"]),
    ]
    assert said[0].text == "THOUGHT: step 1, with the key [redacted] in mind"
    assert SECRET not in (result.events_path).read_text()
    from swarmflow.view.transcript import transcripts

    parts = transcripts(result.events, None)[said[0].session]
    bodies = [p.body for p in parts]  # what it said at each step, before what it did there
    at = [next(i for i, b in enumerate(bodies) if b.startswith(start) or start in b and "{" in b)
          for start in ("THOUGHT: step 1", "sed -i", "THOUGHT: step 2", "printf")]  # fmt: skip
    assert at == sorted(at) and parts[at[0]].kind == "answer" and parts[at[1]].kind == "call"
