"""The DSL under attack: a malformed `.swarm` file and handoffs the checker must see.

Fixes inside `swarmflow/dsl/` are left to its owners: a test of a defect there is marked
`xfail(strict=True)` with the reason, so that it turns into a failure once the defect is fixed
(and the mark is then removed).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmflow import ConfigError
from swarmflow.dsl import DslError, check_source, load_flow

HUMAN_TO_AGENT = """flow f(task: str) -> str
agent b {}
steps {
  said = human("what should b do?")
  return b("do: {said}").text
}
"""


def test_the_checker_reports_a_human_answer_handed_to_an_agent_without_an_edge() -> None:
    errors = [d for d in check_source(HUMAN_TO_AGENT, "t.swarm") if d.is_error]
    assert any("human -> b" in d.message for d in errors)


def test_with_the_edge_from_human_the_checker_is_content() -> None:
    source = HUMAN_TO_AGENT.replace("agent b {}", "agent b {}\nedges human -> b")
    assert [d for d in check_source(source, "t.swarm") if d.is_error] == []


def test_a_file_that_is_not_utf8_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "binary.swarm"
    path.write_bytes(b"\xff\xfe flow \x00\x01")
    with pytest.raises((DslError, ConfigError), match="binary.swarm"):
        load_flow(path)
