"""The flagship shape with git worktrees, written in `.swarm`: coders edit, reviewers read."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from swarmflow import run
from swarmflow.dsl import load_source
from swarmflow.testing import FunctionModel, tool_call

from .helpers import DOCS, of_type

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def flagship() -> str:
    return re.search(r"```swarm check-only\n(.*?)```", DOCS.read_text(), re.DOTALL).group(1)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "app.py").write_text("VALUE = 1\n")
    subprocess.run(["git", "-C", str(root), "add", "."], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(root),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "start",
        ],
        check=True,
    )
    return root


def policy(request):
    last = request.messages[-1]
    if request.agent == "coder":
        if last.role == "tool":
            return "changed app.py"
        attempt = re.search(r"attempt (\d+)", request.system).group(1)
        return tool_call("edit", path="app.py", old="VALUE = 1", new=f"VALUE = {attempt}0")
    if request.agent == "reviewer":
        if last.role == "tool":
            return f"reviewed: {last.content.strip()[:40]}"
        return tool_call("read_file", path="app.py")
    if "JSON" in request.prompt:
        return '{"choice": 0, "confidence": 0.95, "reason": "smallest"}'
    return "noted"


async def test_the_worktree_flagship_runs_with_streaming_reviews(repo, tmp_path):
    flow = load_source(flagship(), "flagship.swarm")
    result = await run(
        flow, model=FunctionModel(policy), repo=repo, task="bump VALUE", runs_root=tmp_path / "runs"
    )
    assert result.status == "ok", result.error
    assert result.output.choice == 0
    commits = of_type(result.events, "workspace_changed")
    assert len(commits) == 3
    reviews = [e for e in of_type(result.events, "agent_finished") if e.agent == "reviewer"]
    assert len(reviews) == 3
    # each reviewer read its own coder's worktree, lent with `workspace: c`
    assert sorted(r.preview.split("\t")[-1] for r in reviews) == [
        "VALUE = 00",
        "VALUE = 10",
        "VALUE = 20",
    ]
