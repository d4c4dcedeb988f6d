"""docs/getting-started.md works as written: every snippet runs, the real endpoint over HTTP."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.docs_snippets import ROOT, Block, blocks, run_python, run_shell
from tests.support.chat_server import ChatServer, Reply, completion

PAGE = ROOT / "docs" / "getting-started.md"
SECTIONS = PAGE.read_text(encoding="utf-8").split("\n## ")


def _blocks_of(heading: str) -> list[Block]:
    """The blocks of the section whose heading starts with `heading`, at their page lines."""
    section = next(s for s in SECTIONS if s.startswith(heading))
    start = PAGE.read_text(encoding="utf-8").index(section)
    end = start + len(section)
    text = PAGE.read_text(encoding="utf-8")
    lines = (text.count("\n", 0, start) + 1, text.count("\n", 0, end) + 1)
    return [b for b in blocks(PAGE) if lines[0] <= b.line <= lines[1]]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The reader's own folder, with the files the page asks them to save."""
    for block in blocks(PAGE):
        if block.file is not None:
            (tmp_path / block.file).write_text(block.code, encoding="utf-8")
    return tmp_path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return {**clean, "SWARMFLOW_RUNS": str(tmp_path / "runs"), "SWARMFLOW_BLOCK_MODEL_CALLS": "1"}


def test_the_page_has_the_promised_parts() -> None:
    languages = [b.language for b in blocks(PAGE)]
    assert "swarm" in languages and languages.count("python") >= 5 and "sh" in languages
    assert all(b.language in ("python", "sh", "swarm") for b in blocks(PAGE))


def test_the_python_flow_runs_with_scripted_and_function_models(
    folder: Path, env: dict[str, str]
) -> None:
    scripts = [b for b in _blocks_of("2.") if b.language == "python" and b.file is None]
    assert len(scripts) == 2
    first = run_python(scripts[0], folder, env)
    assert first.startswith("ok approved=True score=0.8 comments='clear and short'")
    run_python(scripts[1], folder, env)


def test_the_swarm_flow_checks_draws_and_runs(folder: Path, env: dict[str, str]) -> None:
    section = _blocks_of("3.")
    [swarm] = [b for b in section if b.language == "swarm"]
    assert swarm.file == "write_up.swarm"
    [shell] = [b for b in section if b.language == "sh"]
    check, graph, text, as_json = run_shell(shell, folder, env)
    assert "flowchart" in graph
    assert 'output: {"approved": true, "score": 0.9, "comments": ""}' in text
    assert json.loads(as_json)["output"] == {"approved": True, "score": 0.9, "comments": ""}
    [script] = [b for b in section if b.language == "python"]
    assert run_python(script, folder, env).startswith("ok approved=True score=0.9")


def _answer(body: dict[str, Any]) -> Reply:
    """A server that plays the three roles, told apart by their role cards."""
    system = body["messages"][0]["content"]
    if "review" in system:
        return completion('{"approved": true, "score": 0.7, "comments": "over HTTP"}')
    if "split" in system:
        return completion("Why tests matter\nHow to start")
    return completion("A short section.")


@pytest.fixture
def endpoint(env: dict[str, str]) -> Iterator[ChatServer]:
    with ChatServer() as server:
        server.responder = _answer
        env.update(OPENAI_BASE_URL=server.url, SWARMFLOW_BLOCK_MODEL_CALLS="0")
        yield server
    assert not server.errors


def test_the_real_endpoint_steps_run_over_http(
    folder: Path, env: dict[str, str], endpoint: ChatServer
) -> None:
    section = _blocks_of("4.")
    [shell] = [b for b in section if b.language == "sh"]
    [out] = run_shell(shell, folder, env)
    assert "status: ok" in out and '"comments": "over HTTP"' in out
    [script] = [b for b in section if b.language == "python"]
    assert run_python(script, folder, env).startswith("ok approved=True score=0.7")
    models = {json.loads(r.raw)["model"] for r in endpoint.requests if r.raw}
    assert models == {"qwen2.5:7b"}
