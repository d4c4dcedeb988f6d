"""docs/cli.md works as written: its Python flow checks, draws and runs by each reference."""

from __future__ import annotations

import os
from pathlib import Path

from tests.docs_snippets import ROOT, blocks, run_shell

PAGE = ROOT / "docs" / "cli.md"


def test_the_pages_commands_run_as_written(tmp_path: Path) -> None:
    for block in blocks(PAGE):
        if block.file is not None:
            (tmp_path / block.file).write_text(block.code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["SWARMFLOW_RUNS"] = str(tmp_path / "runs")
    (shell,) = [b for b in blocks(PAGE) if b.language == "sh"]
    _, drawn, by_object, by_demo = run_shell(shell, tmp_path, env)  # each one exits 0
    assert drawn.startswith("flowchart LR") and "writer[writer]" in drawn
    assert "status: ok" in by_object and "Small functions, named for what they do." in by_object
    assert "status: ok" in by_demo and "20 words on code review" in by_demo
