"""docs/harnesses.md: its examples load, and its template table is the package's."""

from __future__ import annotations

import re
from pathlib import Path

import swarmflow.harnesses
from swarmflow.dsl import check_source
from tests.docs_snippets import blocks

PAGE = Path(__file__).resolve().parents[2] / "docs" / "harnesses.md"


def test_the_python_example_declares_a_team_with_a_harness_agent() -> None:
    (block,) = [b for b in blocks(PAGE) if b.language == "python"]
    scope: dict[str, object] = {}
    exec(block.code, scope)
    team = scope["TEAM"]
    assert team.get("coder").harness.name == "mini-swe-agent"  # type: ignore[attr-defined]
    assert team.get("reviewer").harness is None  # type: ignore[attr-defined]


def test_the_swarm_example_checks_clean() -> None:
    (block,) = [b for b in blocks(PAGE) if b.language == "swarm"]
    assert check_source(block.code, resolve=True) == []


def test_every_template_in_the_table_is_exported() -> None:
    table = PAGE.read_text().split("## Templates", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"^\| `(\w+)\(", table, re.MULTILINE)
    assert sorted(named) == sorted(n for n in swarmflow.harnesses.__all__ if n != "Harness")
