"""The README's snippets run, and its command lines name commands and options that exist."""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swarmflow.cli import main
from tests.docs_snippets import ROOT, Block, blocks, run_python
from tests.support.chat_server import ChatServer, Reply, completion

README = ROOT / "README.md"


def _answer(body: dict[str, Any]) -> Reply:
    """The flagship flow's roles over HTTP: the arbiter answers a Verdict, the rest in words."""
    asked = json.dumps(body["messages"][-1])
    if "response_format" in body or "JSON schema" in asked:
        return completion('{"choice": 0, "confidence": 0.9, "reason": "only one"}')
    return completion("Nothing to change.")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A git repository with the coder's card, as the README's flow expects."""
    (tmp_path / "coder.md.j2").write_text("You are a coder. Make one small change.\n")
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", *command]
        subprocess.run(git, cwd=tmp_path, check=True)
    return tmp_path


@pytest.fixture
def endpoint() -> Iterator[ChatServer]:
    with ChatServer() as server:
        server.responder = _answer
        yield server
    assert not server.errors


def test_the_python_snippets_run_in_order(folder: Path, endpoint: ChatServer) -> None:
    """Read as one script, the way the README reads: later blocks use earlier names."""
    python = [b for b in blocks(README) if b.language == "python" and not _awaits(b)]
    assert len(python) >= 4
    script = Block("python", None, "\n".join(b.code for b in python), python[0].line)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(
        OPENAI_BASE_URL=endpoint.url,
        OPENAI_API_KEY="sk-readme-0123456789",
        SWARMFLOW_BLOCK_MODEL_CALLS="0",
        SWARMFLOW_RUNS=str(folder / "runs"),
    )
    out = run_python(script, folder, env)
    assert out.startswith("ok choice=0 confidence=0.9")
    printed = out.splitlines()
    assert "submitted: the helper says 42" in printed
    assert "approve 2" in printed  # the harness coder's two model calls, and its patch approved
    assert {json.loads(r.raw)["model"] for r in endpoint.requests if r.raw} == {"gpt-4o-mini"}


def _awaits(block: Block) -> bool:
    """A fragment written for inside an async function (top-level `await`, `async with`)."""
    async_nodes = (ast.Await, ast.AsyncWith, ast.AsyncFor)
    for statement in ast.parse(block.code).body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if any(isinstance(node, async_nodes) for node in ast.walk(statement)):
            return True
    return False


def test_the_async_fragments_compile_and_import() -> None:
    """Fragments meant for inside `async def`: they compile there, and their imports exist."""
    fragments = [b for b in blocks(README) if b.language == "python" and _awaits(b)]
    for block in fragments:
        compile(block.code, f"README.md:{block.line}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        for node in ast.parse(block.code).body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                try:
                    exec(compile(ast.Module([node], []), "README.md", "exec"), {})
                except ModuleNotFoundError as missing:  # an optional extra, e.g. `otel`
                    assert not (missing.name or "").startswith("swarmflow"), missing


def test_the_swarm_snippet_checks_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [swarm] = [b for b in blocks(README) if b.language == "swarm"]
    path = tmp_path / "fix.swarm"
    path.write_text(swarm.code)
    (tmp_path / "coder.md.j2").write_text("You are a coder.\n")
    assert main(["check", str(path)]) == 0, capsys.readouterr()


def _command_lines() -> list[str]:
    lines = []
    for block in blocks(README):
        if block.language == "sh":
            lines += [ln.split("  #")[0].strip() for ln in block.code.splitlines()]
    return [ln for ln in lines if ln.startswith("swarmflow ")]


def _help(words: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main([*words, "--help"]) == 0
    return capsys.readouterr().out


def test_every_documented_command_and_option_exists(capsys: pytest.CaptureFixture[str]) -> None:
    lines = _command_lines()
    assert len(lines) >= 10
    for line in lines:
        words = line.split()[1:3]
        if words[0].startswith("-"):
            continue
        usage = _help(words[:1], capsys)
        if len(words) > 1 and re.search(rf"^    {re.escape(words[1])}\b", usage, re.M):
            usage = _help(words, capsys)  # a subcommand: `swarmflow experiment run ...`
        else:
            words = words[:1]
        for option in re.findall(r"(?<![\w-])--[a-z][a-z-]*", line):
            assert option in usage, (
                f"README: {line!r}: `swarmflow {' '.join(words)}` has no {option}"
            )
    continuation = [ln for b in blocks(README) if b.language == "sh" for ln in b.code.splitlines()]
    demo = _help(["demo"], capsys)
    for line in continuation:
        if line.lstrip().startswith("#"):
            for option in re.findall(r"(?<![\w-])--[a-z][a-z-]*", line):
                assert option in demo, f"README: swarmflow demo has no {option}"


def test_the_sign_off_commands_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `--defer` walk-through, with the run directory and token it prints filled in."""
    [block] = [b for b in blocks(README) if b.language == "sh" and "sign_off" in b.code]
    run_line, resume_line = [ln.split("  #")[0].strip() for ln in block.code.splitlines()]
    monkeypatch.setenv("SWARMFLOW_RUNS", str(tmp_path / "runs"))

    words = shlex.split(run_line)[1:]
    words[words.index("examples/sign_off.swarm")] = str(ROOT / "examples" / "sign_off.swarm")
    assert main(words) == 1  # paused: not ended
    out = capsys.readouterr().out
    found = re.search(r"swarmflow resume (\S+) --answer (\w+)=VALUE", out)
    assert found is not None, out
    resume = shlex.split(resume_line.replace("runs/<run_id>", found.group(1)))[1:]
    resume = [w.replace("TOKEN=", f"{found.group(2)}=") for w in resume]
    assert main(resume) == 0
    assert "output: ship it" in capsys.readouterr().out
