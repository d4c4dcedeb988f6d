"""`use` finds a Python module in a `.py` file next to the `.swarm` file."""

from __future__ import annotations

import pytest

from swarmflow import run
from swarmflow.dsl import DslError, check_file, load_flow
from swarmflow.testing import FunctionModel

FLOW = """flow f(task: str) -> str
use shout from local_helpers_for_test
steps {
  return shout(task)
}
"""


async def test_a_module_next_to_the_flow_is_found_by_check_and_by_the_run(tmp_path):
    (tmp_path / "local_helpers_for_test.py").write_text(
        "def shout(text):\n    return text.upper() + '!'\n"
    )
    path = tmp_path / "f.swarm"
    path.write_text(FLOW)
    assert check_file(path) == []
    result = await run(load_flow(path), task="go", model=FunctionModel(lambda r: ""))
    assert result.output == "GO!"


def test_a_module_found_nowhere_is_a_located_error(tmp_path):
    path = tmp_path / "f.swarm"
    path.write_text(FLOW.replace("local_helpers_for_test", "no_such_module_here"))
    [found] = check_file(path)
    assert (found.code, found.line) == ("unknown-module", 2)
    assert "a .py file next to this flow" in found.message


def test_a_used_name_that_is_not_a_tool_is_a_located_error_when_the_flow_loads(tmp_path):
    (tmp_path / "not_tools_for_test.py").write_text(
        "LIMIT = 3\nclass Thing:\n    pass\ndef shout(text: str) -> str:\n    return text\n"
    )
    path = tmp_path / "f.swarm"
    path.write_text(
        "flow f(task: str) -> str\n"
        "use LIMIT, Thing, shout from not_tools_for_test\n"
        "agent a { tools [shout, LIMIT, Thing] }\n"
        "steps {\n  return a(task).text\n}\n"
    )
    with pytest.raises(DslError) as caught:
        load_flow(path)
    found = [(d.line, d.column, d.message) for d in caught.value.diagnostics]
    assert found == [
        (3, 25, "'LIMIT' is not a tool but the int 3; list a function, an @tool function "
         "or a tool server here"),
        (3, 32, "'Thing' is not a tool but the class Thing; list a function, an @tool "
         "function or a tool server here"),
    ]  # fmt: skip
