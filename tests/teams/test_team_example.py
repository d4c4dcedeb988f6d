"""The repository Q&A example runs offline: four agents, five phases, each gated on approvals."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio.to_thread
import pytest

from swarmflow.report.adherence import adherence
from tests.runtime.helpers import of_type

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "team_repo_qa"
MEMBERS = ("agent2", "agent3", "agent4")


def _runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("team_repo_qa_run", EXAMPLE / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "calc").mkdir(parents=True)
    (root / "calc" / "stats.py").write_text("def mean(values):\n    return sum(values) / 2\n")
    (root / "README.md").write_text("calc: small statistics helpers\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_stats.py").write_text("from calc.stats import mean\n")
    return root


async def _run(repo: Path, tmp_path: Path, listen: str) -> Any:
    main = _runner().main
    argv = ["--repo", str(repo), "--listen", listen, "What does calc do?"]
    return await anyio.to_thread.run_sync(
        lambda: main(argv, runs_root=tmp_path / "runs", raise_on_failure=False)
    )


def _posts(result: Any) -> list[tuple[str, str]]:
    return [(e.sender, e.text) for e in of_type(result, "board_message_posted")]


def _gated(posts: list[tuple[str, str]]) -> None:
    """Phase k+1 opens only after every member answered phase k."""
    for k in range(1, 5):
        opened = next(i for i, (who, text) in enumerate(posts) if text.startswith(f"[P{k + 1} "))
        answers = {m.group(1) for _, text in posts[:opened]
                   if (m := re.match(rf"\[P{k} \w+ (agent\d)\]", text))}  # fmt: skip
        assert answers == set(MEMBERS), (k, answers)


@pytest.mark.parametrize("listen", ["passive", "blocking"])
async def test_the_example_runs_the_five_phases_offline(
    repo: Path, tmp_path: Path, listen: str
) -> None:
    result = await _run(repo, tmp_path, listen)
    assert result.status == "ok", result.error
    answer = result.output
    assert answer.startswith("Answer to 'What does calc do?'")
    assert all(f"(from {m})" in answer for m in MEMBERS)
    threads = [e.thread for e in of_type(result, "thread_created")]
    assert threads == ["findings", "plan", "worklog", "final"]
    posts = _posts(result)
    _gated(posts)
    assert sum(text.startswith("[P3 result") for _, text in posts) == 3
    waits = [e for e in of_type(result, "tool_executed") if e.tool == "wait_for_mention"]
    assert (len(waits) == 0) == (listen == "passive")
    assert {e.mode for e in of_type(result, "mention_delivered")} == {listen}
    found = adherence(result.events)
    assert found.axis("participation").ok and found.axis("information flow").ok
    assert of_type(result, "team_ended")[0].reason == "submitted"
    models = {e.model for e in of_type(result, "model_called")}
    assert models == {"team-qa-scripted"}  # clearly a scripted policy, not an LLM


async def test_the_example_takes_a_model_on_an_openai_compatible_endpoint(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.chat_server import ChatServer, completion

    monkeypatch.setenv("SWARMFLOW_BLOCK_MODEL_CALLS", "0")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-example-0123456789")
    main = _runner().main
    with ChatServer() as server:
        server.responder = lambda body: completion("calc averages numbers.")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        argv = ["--repo", str(repo), "--model", "qa-model", "Why?"]
        result = await anyio.to_thread.run_sync(
            lambda: main(argv, runs_root=tmp_path / "runs", raise_on_failure=False)
        )
    assert result.status == "ok", result.error
    assert result.output == "calc averages numbers."  # the assembler answered; all idle
    assert of_type(result, "team_ended")[0].reason == "idle"
    assert {r.body["model"] for r in server.requests} == {"qa-model"}
    assert not server.errors
