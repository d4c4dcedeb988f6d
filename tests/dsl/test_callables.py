"""The table of names a flow can use: every name that checks also runs."""

from __future__ import annotations

import pytest

from swarmflow import run
from swarmflow.dsl import check_source
from swarmflow.dsl.check.callables import callable_names, keywords, names, table
from swarmflow.dsl.syntax.ast import OPERATORS
from swarmflow.dsl.syntax.diagnostics import render_all
from swarmflow.testing import FunctionModel

from .helpers import flow_text, load

ENTRIES = list(table().values())
HEAD = "use passed from tests.dsl.helpers\nuse sorted from builtins"


def clean(source: str) -> None:
    found = [d for d in check_source(source, "t.swarm") if d.is_error]
    assert found == [], render_all(found, source)


async def run_ok(source: str) -> object:
    result = await run(load(source), task="t", model=FunctionModel(lambda r: "done"), human=["yes"])
    assert result.status == "ok", result.error
    return result.output


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.example], ids=lambda e: e.name)
async def test_every_example_call_checks_and_runs(entry):
    source = flow_text(f"  x = {entry.example}\n  return x", signature="flow f(task: str)")
    clean(source)
    await run_ok(source)


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.value], ids=lambda e: e.name)
async def test_every_name_that_checks_as_a_value_runs_as_that_value(entry):
    source = flow_text(
        f"  x = passed({entry.name})\n  return x", head=HEAD, signature="flow f(task: str)"
    )
    clean(source)
    assert await run_ok(source) is entry.value


def test_the_syntax_stage_knows_the_operators_the_table_describes():
    """The syntax errors suggest operators from the syntax stage's own list (the syntax stage
    does not read this table); it names the same operators."""
    assert names("operator") == OPERATORS


@pytest.mark.parametrize("name", sorted(callable_names()))
def test_every_called_name_has_a_value_and_an_example(name):
    entry = table()[name]
    assert entry.value is not None and entry.example.startswith(name)


@pytest.mark.parametrize("tool", sorted(names("tool")))
async def test_every_tool_an_agent_may_list_runs(tool):
    source = flow_text(
        "  x = a(task)\n  return x.text",
        agents=f"agent a {{ tools [{tool}] }}",
        signature="flow f(task: str)",
    )
    clean(source)
    assert await run_ok(source) == "done"


async def test_a_built_in_passed_to_python_runs_as_checked():
    source = flow_text(
        "  ys = sorted([[3, 1], [0, 9], [4]], key: max)\n  return ys",
        head=HEAD,
        signature="flow f(task: str)",
    )
    clean(source)
    assert await run_ok(source) == [[3, 1], [4], [0, 9]]


def test_operator_options_come_from_the_operators_signatures():
    assert table()["parallel"].options == ("limit", "split", "first")
    assert set(table()["human"].options) == {"timeout", "on_timeout", "default", "output"}
    assert "keep" in table()["compact"].options
    assert {"repeat", "until", "match", "for", "in", "parallel"} <= set(keywords())


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.params], ids=lambda e: e.name)
def test_every_built_in_is_checked_against_the_values_its_entry_says_it_takes(entry):
    params = entry.params
    counts = [params.least - 1, *([] if params.most is None else [params.most + 1])]
    for count in [c for c in counts if c >= 0]:
        args = ", ".join(["1"] * count)
        source = flow_text(f"  x = {entry.name}({args})\n  return x", signature="flow f(task: str)")
        found = [d.message for d in check_source(source, "t.swarm") if d.is_error]
        assert params.wrong_count(entry.name) in found, (count, found)
