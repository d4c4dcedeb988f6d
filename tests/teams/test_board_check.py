"""The board tools are built-in tools: an agent lists them in `tools=` (or `tools [...]` in a
`.swarm` file) and `swarmflow check` accepts them; a misspelt one gets the usual hint."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmflow.cli import main
from swarmflow.dsl.check.callables import tool_names

FLOW = """flow talk(task: str) -> any
agent lead { tools [create_thread, send_message, wait_for_mention, submit] }
agent helper { tools [{tool}] }
edges lead -> helper
steps {
  asked = lead(task)
  heard = helper(task)
  return "{asked} {heard}"
}
"""


def test_the_callables_table_knows_the_board_tools() -> None:
    assert {"create_thread", "send_message", "wait_for_mention"} <= set(tool_names())


def test_swarmflow_check_accepts_the_board_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "talk.swarm"
    good.write_text(FLOW.replace("{tool}", "wait_for_mention"))
    assert main(["check", str(good)]) == 0
    bad = tmp_path / "typo.swarm"
    bad.write_text(FLOW.replace("{tool}", "wait_for_mentions"))
    assert main(["check", str(bad)]) == 1
    assert "did you mean 'wait_for_mention'" in capsys.readouterr().out
