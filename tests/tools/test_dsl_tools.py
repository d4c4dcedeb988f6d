"""A `.swarm` flow gives its agent a Python tool from a module next to the flow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swarmflow import run
from swarmflow.core.messages import ModelRequest
from swarmflow.dsl import check_file, load_flow
from swarmflow.testing import FunctionModel, tool_call

FLOW = """flow weather(city: str) -> str
use lookup, plain from weather_tools_for_test

agent analyst {
  tools [lookup, plain, read_file]
}

steps {
  return analyst("What is the weather in {city}?").text
}
"""

MODULE = '''
from swarmflow import tool


@tool
def lookup(city: str) -> dict:
    """Current weather for a city.

    Args:
        city: The city's English name.
    """
    return {"city": city, "sky": "clear"}


def plain(word: str) -> str:
    """Repeats a word twice."""
    return word * 2
'''


def write_flow(tmp_path: Path, flow: str = FLOW) -> Path:
    (tmp_path / "weather_tools_for_test.py").write_text(MODULE)
    path = tmp_path / "weather.swarm"
    path.write_text(flow)
    return path


async def test_a_swarm_flow_uses_a_tool_from_a_module_next_to_it(tmp_path: Path) -> None:
    path = write_flow(tmp_path)
    assert check_file(path) == []
    seen: list[ModelRequest] = []

    def policy(request: ModelRequest) -> Any:
        seen.append(request)
        done = [m.content for m in request.messages if m.role == "tool"]
        if not done:
            return tool_call("lookup", city="Lima")
        if len(done) == 1:
            return tool_call("plain", word="ab")
        return json.dumps(done)

    result = await run(load_flow(path), city="Lima", model=FunctionModel(policy))
    assert [t.name for t in seen[0].tools] == ["lookup", "plain", "read_file"]
    lookup_spec = seen[0].tools[0]
    assert lookup_spec.parameters["properties"]["city"]["description"] == "The city's English name."
    looked, doubled = json.loads(result.output)
    assert json.loads(looked) == {"city": "Lima", "sky": "clear"}
    assert doubled == "abab"


def test_an_unknown_tool_name_is_still_a_located_error(tmp_path: Path) -> None:
    path = write_flow(tmp_path, FLOW.replace("tools [lookup,", "tools [lookpu,"))
    [found] = check_file(path)
    assert found.code == "unknown-tool" and found.line == 5
