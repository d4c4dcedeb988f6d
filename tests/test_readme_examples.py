"""The README's flow examples are the real ones: the Python flow runs, the `.swarm` form checks."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import anyio
import pytest

from swarmflow import run_sync
from swarmflow.cli import main
from swarmflow.core.messages import ModelRequest
from swarmflow.flows import create_target
from swarmflow.testing import FunctionModel

ROOT = Path(__file__).resolve().parent.parent
CARD = "You fix the bug the task names in the repository, then submit.\n"
"""The README's `coder.md.j2`: the reader's own card, here one that needs no variables."""


def readme_block(language: str) -> str:
    """The README's one fenced block in `language`, right after the heading that names it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)
    flows = [b for b in blocks if "fix" in b and ("@flow" in b or "flow fix" in b)]
    assert len(flows) == 1, f"README.md should hold one {language} flow example"
    return str(flows[0])


def test_the_readme_swarm_flow_checks_clean(tmp_path: Path) -> None:
    (tmp_path / "fix.swarm").write_text(readme_block("swarm"), encoding="utf-8")
    (tmp_path / "coder.md.j2").write_text(CARD, encoding="utf-8")
    assert main(["check", str(tmp_path / "fix.swarm")]) == 0


def _policy(request: ModelRequest) -> str:
    """Plain answers; the arbiter's structured pick is a confident choice of candidate 0."""
    if request.output is not None:
        return '{"choice": 0, "confidence": 0.9}'
    return f"{request.agent} is done"


def test_the_readme_python_flow_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = readme_block("python")
    head, sep, _ = source.partition("\nresult = run_sync(")
    assert sep, "the README example should end by running the flow with run_sync"
    name = f"readme_flow_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(head + "\n", encoding="utf-8")
    (tmp_path / "coder.md.j2").write_text(CARD, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(name)
    target = anyio.run(create_target, tmp_path / "target")
    result = run_sync(
        module.fix, task="make the tests pass", model=FunctionModel(_policy), repo=str(target)
    )
    assert result.status == "ok", result.error
    assert result.output == module.Verdict(choice=0, confidence=0.9)
