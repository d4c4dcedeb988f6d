"""The dataflow executor, run through `swarmflow.run` with scripted and function models."""

from __future__ import annotations

import anyio
import pytest

from swarmflow import FlowFailed, run
from swarmflow.dsl import DslError
from swarmflow.testing import FunctionModel, ScriptedModel, Step

from .helpers import flow_text, load, of_type

AB = "agent a {}\nagent b {}"


async def run_text(source: str, model, **kw):
    kw.setdefault("raise_on_failure", False)  # the tests read failures off the result
    return await run(load(source), model=model, **kw)


def echo(request):
    return f"{request.agent} says: {request.prompt}"


async def test_independent_steps_run_concurrently():
    started: set[str] = set()
    both = anyio.Event()

    async def policy(request):
        started.add(request.agent)
        if len(started) == 2:
            both.set()
        with anyio.fail_after(5):  # run one after the other, this would never be set
            await both.wait()
        return f"{request.agent} done"

    source = flow_text("  x = a(task)\n  y = b(task)\n  return [x.text, y.text]", agents=AB)
    result = await run_text(source, FunctionModel(policy), task="t")
    assert result.status == "ok", result.error
    assert result.output == ["a done", "b done"]


async def test_independent_calls_both_start_before_either_finishes():
    model = ScriptedModel({"a": ["from a"], "b": ["from b"]}, latency=0.05)
    source = flow_text("  x = a(task)\n  y = b(task)\n  return y.text", agents=AB)
    result = await run_text(source, model, task="t")
    kinds = [
        (e.type, e.agent) for e in result.events if e.type in ("session_started", "model_called")
    ]
    assert kinds[:2] == [("session_started", "a"), ("session_started", "b")]
    assert {k for k, _ in kinds[2:]} == {"model_called"}


async def test_dependent_steps_wait_for_what_they_read():
    source = flow_text(
        "  x = a(task)\n  y = b(x)\n  return y.text", agents=AB, edges="edges a -> b"
    )
    result = await run_text(source, FunctionModel(echo), task="go")
    order = [(e.type, e.agent) for e in result.events if e.agent]
    assert order.index(("agent_finished", "a")) < order.index(("session_started", "b"))
    assert result.output.startswith("b says: From a:")


async def test_if_else_and_reassignment():
    source = flow_text(
        '  x = 1\n  if task == "left" { x = 2 } else if task == "mid" { x = 3 } '
        "else { x = x + 10 }\n  return x",
        agents="",
    )
    for task, want in (("left", 2), ("mid", 3), ("other", 11)):
        result = await run_text(source, FunctionModel(echo), task=task)
        assert result.output == want


async def test_return_inside_an_if_ends_the_flow_early():
    source = flow_text(
        '  if task == "stop" { return "stopped" }\n  x = a(task)\n  return x.text',
        agents="agent a {}",
    )
    model = FunctionModel(echo)
    result = await run_text(source, model, task="stop")
    assert result.output == "stopped"
    assert model.requests == []


async def test_parallel_with_index_card_variables_and_first():
    agents = 'agent a { card "Attempt {{ attempt }}." }'
    source = flow_text(
        '  outs = parallel(3) |i| { a("try {i}", attempt: i) }\n'
        "  one = parallel(3, first: 1) |i| { i * 10 }\n"
        "  return [compact(outs), compact(one)]",
        agents=agents,
    )
    result = await run_text(source, FunctionModel(lambda r: r.system), task="t")
    texts, firsts = result.output
    assert sorted(o.text for o in texts) == ["Attempt 0.", "Attempt 1.", "Attempt 2."]
    assert len(firsts) == 1


async def test_pipeline_stages_agents_imports_and_bodies():
    source = flow_text(
        '  xs = pipeline(["x\\nmore", "y"], a, first_line) |line| { "<{line}>" }\n'
        "  return compact(xs)",
        head="use first_line from swarm_examples",
        agents="agent a {}",
    )
    result = await run_text(source, FunctionModel(lambda r: f"{r.prompt}!\nsecond line"), task="t")
    assert sorted(result.output) == ["<x>", "<y!>"]


async def test_pipeline_fed_by_parallel_streams_items_as_they_finish():
    reviewer_started = anyio.Event()

    async def policy(request):
        if request.agent == "b":
            reviewer_started.set()
            return "reviewed"
        if "0" not in request.prompt:  # coders 1 and 2 finish only after a review started
            with anyio.fail_after(5):
                await reviewer_started.wait()
        return f"candidate {request.prompt}"

    source = flow_text(
        '  reviews = pipeline(parallel(3) |i| { a("coder {i}") }) |c| { b(c) }\n'
        "  return len(compact(reviews))",
        agents=AB,
        edges="edges a -> b",
    )
    result = await run_text(source, FunctionModel(policy), task="t")
    assert result.status == "ok", result.error
    assert result.output == 3


async def test_compact_keep_and_human():
    source = flow_text(
        '  outs = parallel(2) |i| { a("{i}") }\n'
        "  kept = compact(outs, keep: has_text)\n"
        '  answer = human("Ship {len(kept)}?", kept, timeout: 5s)\n'
        "  return answer",
        head="use has_text from swarm_examples",
        agents="agent a {}",
        edges="edges a -> human",
    )
    model = FunctionModel(lambda r: "" if r.prompt == "0" else "kept")
    result = await run_text(source, model, task="t", human=["yes, ship it"])
    assert result.output == "yes, ship it"
    [asked] = of_type(result.events, "human_requested")
    assert asked.question == "Ship 1?"


async def test_sessions_keep_turns_in_source_order_and_close():
    source = flow_text(
        '  session a {\n    send "one"\n    send each ["two", "three"]\n'
        '    v = ask "four"\n  }\n  return v.text',
        agents="agent a {}",
    )
    model = FunctionModel(lambda r: f"ack {r.prompt}")
    result = await run_text(source, model, task="t")
    assert [r.prompt for r in model.requests] == ["one", "two", "three", "four"]
    assert result.output == "ack four"
    ops = [(e.type, e.operator) for e in result.events if e.type.startswith("operator")]
    assert ops == [("operator_started", "agent_session"), ("operator_finished", "agent_session")]


async def test_a_return_inside_a_session_still_closes_it():
    source = flow_text(
        '  session a {\n    v = ask "q"\n    return v.text\n  }', agents="agent a {}"
    )
    result = await run_text(source, FunctionModel(lambda r: "answer"), task="t")
    assert result.output == "answer"
    assert [e.type for e in result.events if e.type == "operator_finished"] == ["operator_finished"]


async def test_structured_answers_and_outputs():
    source = flow_text(
        "  r = a(task, output: Review)\n"
        '  session b { v = ask "pick" as Verdict }\n'
        "  return [r.value.score, v.choice]",
        head="use Review, Verdict from swarm_examples",
        agents=AB,
    )

    def policy(request):
        if request.agent == "a":
            return '{"approved": true, "score": 0.25}'
        return '{"choice": 2, "confidence": 0.9}'

    result = await run_text(source, FunctionModel(policy), task="t")
    assert result.output == [0.25, 2]


async def test_inputs_use_defaults_and_text_is_converted():
    source = flow_text(
        "  return n * 2", signature="flow f(task: str, n: int = 4) -> int", agents=""
    )
    flow = load(source)
    assert (await run(flow, model=FunctionModel(echo), task="t")).output == 8
    assert (await run(flow, model=FunctionModel(echo), task="t", n="5")).output == 10


async def test_run_time_errors_are_located_diagnostics():
    source = flow_text("  xs = []\n  return xs[0]", agents="")
    result = await run_text(source, FunctionModel(echo), task="t")
    assert result.status == "failed"
    assert isinstance(result.error, DslError)
    [d] = result.error.diagnostics
    assert (d.line, d.column, d.code) == (8, 10, "runtime")
    assert "cannot take [0] of a list" in d.message


async def test_a_mistake_in_a_branch_fails_the_run_with_its_located_error():
    source = flow_text("  outs = parallel(2) |i| { [1][i] }\n  return outs", agents="")
    result = await run_text(source, FunctionModel(echo), task="t")
    assert result.status == "failed" and isinstance(result.error, DslError)


async def test_a_failing_step_fails_the_run_with_its_own_error():
    model = ScriptedModel({"a": [Step(error=RuntimeError("boom"))], "b": ["fine"]})
    source = flow_text("  x = a(task)\n  y = b(task)\n  return y", agents=AB)
    result = await run_text(source, model, task="t")
    assert result.status == "failed"
    assert not isinstance(result.error, BaseExceptionGroup)


def test_load_refuses_a_flow_with_errors():
    with pytest.raises(DslError) as caught:
        load(flow_text("  return nope", agents=""))
    assert "unknown name 'nope'" in str(caught.value)


def test_load_reports_missing_imports_and_non_models_where_they_are_used():
    source = flow_text(
        '  session a { v = ask "q" as first_line }\n  return v',
        head="use first_line from swarm_examples\n"
        "use nothing from swarm_examples",
        agents="agent a {}",
    )
    with pytest.raises(DslError) as caught:
        load(source)
    messages = [(d.line, d.message) for d in caught.value.diagnostics]
    assert any("has no 'nothing'" in m for _, m in messages)
    assert any(line == 7 and "not a pydantic model" in m for line, m in messages)


async def test_text_inputs_become_the_declared_number_or_truth_value():
    source = (
        "flow f(n: int, rate: float, ok: bool) -> str\n"
        'steps {\n  return "{n + 1} {rate * 2} {ok}"\n}\n'
    )
    model = FunctionModel(lambda r: "")
    result = await run(load(source), n=" 3", rate="0.5", ok="yes", model=model)
    assert result.output == "4 1.0 True"
    with pytest.raises(FlowFailed, match="input 'n' is int: 'three' is not one"):
        await run(load(source), n="three", rate="0.5", ok="no", model=model)
    with pytest.raises(FlowFailed, match="input 'ok' is bool: 'maybe' is not one"):
        await run(load(source), n="3", rate="0.5", ok="maybe", model=model)
