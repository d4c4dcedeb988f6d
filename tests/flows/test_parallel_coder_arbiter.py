"""The flagship flow end to end on a real repository, played by the scripted demo policy.

The reviewers really run pytest in each candidate's worktree, so these runs take a few seconds;
one run is shared by the tests that only look at its results.
"""

from __future__ import annotations

import shlex
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from swarmflow import RunResult
from swarmflow.channels import ScriptedHuman
from swarmflow.core.messages import ModelRequest
from swarmflow.flows import DEMO_TASK, FixResult, Verdict, create_target, demo_model, solve
from swarmflow.flows.demo import Reply, policy
from swarmflow.flows.parallel_coder_arbiter import TEAM, interpret_answer
from swarmflow.flows.target_repo import default_test_command
from swarmflow.record.events import (
    BranchFinished,
    HandoffRefused,
    HumanAnswered,
    HumanRequested,
    ModelCalled,
    OutcomesCompacted,
    PatchApplied,
    RunFinished,
    RunStarted,
    SessionEnded,
    SessionStarted,
    SessionTold,
    ToolExecuted,
    WorkspaceChanged,
)
from swarmflow.record.sinks import read_events
from swarmflow.report import DEMO_MODEL
from swarmflow.testing import FunctionModel


def git(cwd: Path, *args: str) -> str:
    """Git's stdout (assertions run outside the event loop)."""
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout


def suite_passes(repo: Path, branch: str, scratch: Path) -> bool:
    """Whether the target's test suite passes on `branch` (checked out in a clone)."""
    subprocess.run(
        ["git", "clone", "--quiet", "--branch", branch, str(repo), str(scratch)],
        check=True,
        capture_output=True,
    )
    command = shlex.split(default_test_command())
    done = subprocess.run(command, cwd=scratch, capture_output=True, check=False)
    return done.returncode == 0


def run_demo(root: Path, model: FunctionModel | None = None, **options: Any) -> RunResult:
    """Create a fresh target under `root` and run the flow on it with the demo policy."""

    async def go() -> RunResult:
        target = await create_target(root / "target")
        return await solve(
            target, DEMO_TASK, model=model or demo_model(), runs_root=root / "runs", **options
        )

    result: RunResult = anyio.run(go)
    assert result.status == "ok", result.error
    return result


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    """One run of the demo, shared by the tests that only inspect it."""
    return run_demo(tmp_path_factory.mktemp("demo"), human=[])


def target_of(result: RunResult) -> Path:
    return result.run_dir.parent.parent / "target"


def test_parallel_coders_share_card_tools_and_task_as_a_prefix(demo_run: RunResult) -> None:
    """Each coder's card says which coder it is only after the task, so every coder's first
    request begins with what the first coder's began with; the report shows the share."""
    from swarmflow.report import digest
    from swarmflow.report.text import render_report

    events = demo_run.events
    firsts = {}
    for e in events:
        if isinstance(e, ModelCalled) and e.agent == "coder" and e.session not in firsts:
            firsts[e.session] = e
    calls = list(firsts.values())
    assert len(calls) == 3 and calls[0].shared_prefix_tokens == 0
    assert all(c.shared_prefix_tokens >= 0.95 * c.prompt_tokens for c in calls[1:])
    share = digest(events).by_agent()["coder"].cross_share
    assert share is not None and share >= 0.95
    assert "across sessions" in render_report(events)


# -- the three properties of a demo run ---------------------------------------------------------


def test_the_chosen_patch_makes_the_targets_tests_pass(demo_run: RunResult, tmp_path: Path) -> None:
    out = demo_run.output
    assert isinstance(out, FixResult)
    assert (out.chosen, out.decided_by) == (0, "arbiter")
    assert out.output_branch is not None and out.patch is not None
    assert out.patch.files == ("calc/stats.py",)
    assert [c.outcome for c in out.candidates] == ["ok", "ok", "empty"]
    assert [c.tests for c in out.candidates] == ["passed", "failed", "not run"]
    target = target_of(demo_run)
    assert git(target, "rev-parse", out.output_branch).strip() == out.commit
    assert not suite_passes(target, "main", tmp_path / "before")  # the bug is real
    assert suite_passes(target, out.output_branch, tmp_path / "after")


def test_the_worktrees_are_gone(demo_run: RunResult) -> None:
    target = target_of(demo_run)
    listed = git(target, "worktree", "list", "--porcelain").splitlines()
    assert [line for line in listed if line.startswith("worktree ")] == [f"worktree {target}"]
    branches = set(git(target, "branch", "--format=%(refname:short)").split())
    assert branches == {"main", demo_run.output.output_branch}
    worktrees = demo_run.run_dir / "worktrees"
    assert not worktrees.exists() or not any(worktrees.iterdir())


def test_the_event_log_is_complete(demo_run: RunResult) -> None:
    events = demo_run.events
    assert [e.seq for e in events] == list(range(len(events)))
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    assert events[-1].status == "ok"
    on_disk = list(read_events(demo_run.events_path))
    assert [e.model_dump() for e in on_disk] == [e.model_dump() for e in events]

    started = Counter(e.session for e in events if isinstance(e, SessionStarted))
    ended = Counter(e.session for e in events if isinstance(e, SessionEnded))
    assert started == ended and all(n == 1 for n in ended.values())
    assert Counter(e.agent for e in events if isinstance(e, SessionStarted)) == {
        "coder": 3, "reviewer": 2, "arbiter": 1,
    }  # fmt: skip
    outcomes = {e.branch: e.outcome for e in events if isinstance(e, BranchFinished)}
    assert outcomes["parallel[0]"] == "ok" and outcomes["parallel[2]"] == "empty"
    assert outcomes["pipeline[0]"] == "ok" and outcomes["pipeline[1]"] == "ok"
    dropped = [d for e in events if isinstance(e, OutcomesCompacted) for d in e.dropped]
    assert dropped == [{"index": 2, "reason": "empty"}]

    changes = [e for e in events if isinstance(e, WorkspaceChanged)]
    assert [e.agent for e in changes] == ["coder", "coder"]
    (applied,) = [e for e in events if isinstance(e, PatchApplied)]
    assert applied.commit == demo_run.output.commit
    assert applied.git_branch == demo_run.output.output_branch
    assert applied.source_commit in {e.commit for e in changes}

    tests = [e for e in events if isinstance(e, ToolExecuted) and e.agent == "reviewer"]
    assert sorted(e.result.splitlines()[0] for e in tests) == ["exit code: 0", "exit code: 1"]
    assert not [e for e in events if isinstance(e, HandoffRefused | HumanRequested)]


def test_the_arbiter_is_told_each_review_and_asked_once(demo_run: RunResult) -> None:
    """Each review reaches the arbiter without a model call of its own: one call decides."""
    arbiter = [e for e in demo_run.events if e.agent == "arbiter"]
    told = [e for e in arbiter if isinstance(e, SessionTold)]
    assert sorted(e.text.splitlines()[0] for e in told) == [
        "Candidate 0: the coder's work.", "Candidate 1: the coder's work.",
    ]  # fmt: skip
    assert len([e for e in arbiter if isinstance(e, ModelCalled)]) == 1


# -- the human fallback and a crashing coder ----------------------------------------------------


def test_a_verdict_below_the_threshold_goes_to_the_human(tmp_path: Path) -> None:
    person = ScriptedHuman(["perhaps", "n"])  # the first answer cannot be read: asked again
    result = run_demo(tmp_path, human=person, threshold=0.95)
    out = result.output
    assert [q for q, _ in person.asked] and isinstance(person.asked[0][1], Verdict)
    assert person.asked[0][1].choice == 0 and person.asked[0][1].confidence == 0.9
    assert (out.decided_by, out.chosen, out.output_branch) == ("human", None, None)
    asked = [e for e in result.events if isinstance(e, HumanRequested)]
    answered = [e for e in result.events if isinstance(e, HumanAnswered)]
    assert len(asked) == 2 and asked[0].payload["choice"] == 0
    assert "cannot read the answer 'perhaps'" in asked[1].question
    assert [(e.answer, e.answered_by) for e in answered] == [
        ("perhaps", "scripted"),
        ("n", "scripted"),
    ]
    assert not [e for e in result.events if isinstance(e, PatchApplied)]


def test_a_crashing_coder_is_a_failed_outcome_and_the_flow_still_finishes(
    tmp_path: Path,
) -> None:
    def crash_coder_one(request: ModelRequest) -> Reply:
        briefing = " ".join(m.content or "" for m in request.messages[:3])
        if request.agent == "coder" and "You are coder 1 of" in briefing:
            raise RuntimeError("coder 1 fell over")
        return policy(request)

    result = run_demo(tmp_path, model=FunctionModel(crash_coder_one, name=DEMO_MODEL), human=[])
    out = result.output
    assert [c.outcome for c in out.candidates] == ["ok", "failed", "empty"]
    assert "coder 1 fell over" in out.candidates[1].note
    assert (out.chosen, out.decided_by) == (0, "arbiter")
    dropped = [d for e in result.events if isinstance(e, OutcomesCompacted) for d in e.dropped]
    assert sorted(d["index"] for d in dropped) == [1, 2]
    assert next(d for d in dropped if d["index"] == 1)["reason"].startswith("failed")
    failed = [e for e in result.events if isinstance(e, BranchFinished) and e.outcome == "failed"]
    assert [e.branch for e in failed] == ["parallel[1]"]


# -- small pieces -------------------------------------------------------------------------------


def test_the_team_declares_the_four_edges_and_checks_clean() -> None:
    assert set(TEAM.edges) == {
        ("coder", "reviewer"), ("coder", "arbiter"), ("reviewer", "arbiter"), ("arbiter", "human"),
    }  # fmt: skip
    assert TEAM.check() == []
    assert TEAM.get("coder").workspace == "worktree"
    assert TEAM.get("reviewer").tools == ("read_file", "run_shell")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [("y", 2), ("", 2), ("n", None), ("1", 1), (True, 2), (False, None), (0, 0),
     ({"choice": 1}, 1), (Verdict(choice=None, confidence=1, reason="no"), None)],
)  # fmt: skip
def test_a_persons_answer_is_read_as_a_candidate(answer: object, expected: int | None) -> None:
    verdict = Verdict(choice=2, confidence=0.4, reason="unsure")
    assert interpret_answer(answer, verdict) == expected
