"""Mistakes fail the run at once, even inside a branch or a stage; faults of the world are data."""

from __future__ import annotations

import gc
import warnings
from pathlib import Path
from typing import Any

import pytest

from swarmflow import (
    Agent,
    ConfigError,
    Failed,
    FlowFailed,
    Team,
    TopologyError,
    agent,
    agent_session,
    compact,
    flow,
    parallel,
    pipeline,
    run,
    run_sync,
)
from swarmflow.core.errors import ModelUnavailable, TemplateError
from swarmflow.testing import FunctionModel

HERE = Path(__file__).name


def echo() -> FunctionModel:
    return FunctionModel(lambda req: f"done {req.prompt}")


async def fail(flow_: Any, **kwargs: Any) -> FlowFailed:
    with pytest.raises(FlowFailed) as failed:
        await run(flow_, model=kwargs.pop("model", echo()), events="memory", **kwargs)
    return failed.value


async def test_unknown_agent_inside_a_branch_fails_the_run_with_did_you_mean() -> None:
    @flow(team=Team([Agent("coder"), Agent("reviewer")]))
    async def fix() -> object:
        return compact(await parallel(lambda i: agent("codr", f"task {i}"), n=3))

    failed = await fail(fix)
    assert isinstance(failed.result.error, ConfigError)
    assert "unknown agent 'codr' (did you mean 'coder'?)" in str(failed)
    assert f"{HERE}:" in str(failed) and "in fix" in str(failed)  # the flow's line
    assert failed.__cause__ is failed.result.error
    assert failed.result.status == "failed"
    finished = failed.result.events[-1]
    assert finished.type == "run_finished" and finished.status == "failed"


async def test_unknown_agent_in_an_agent_session_is_named_at_once() -> None:
    @flow(team=Team([Agent("arbiter")]))
    async def f() -> None:
        async with agent_session("arbitre"):
            pass

    failed = await fail(f)
    assert "did you mean 'arbiter'?" in str(failed)


async def test_misspelled_card_variable_in_a_pipeline_stage_fails_the_run() -> None:
    team = Team([Agent("reviewer", card="Review {{ task }} carefully.")])

    @flow(team=team)
    async def f() -> object:
        return [o async for o in pipeline(["a", "b"], lambda x: agent("reviewer", x, tsk=x))]

    failed = await fail(f)
    assert isinstance(failed.result.error, TemplateError)
    assert "'task' is undefined (did you mean 'tsk'?)" in str(failed)
    assert f"{HERE}:" in str(failed)


async def test_missing_card_file_inside_a_branch_fails_the_run(tmp_path: Path) -> None:
    @flow(team=Team([Agent("coder", card="no_such_card.md.j2")]))
    async def f() -> object:
        return await parallel(lambda i: agent("coder", "go"), n=2)

    failed = await fail(f)
    assert "role card 'no_such_card.md.j2' not found" in str(failed)


async def test_card_variable_did_you_mean() -> None:
    @flow(team=Team([Agent("coder", card="Fix {{ task }}.")]))
    async def f() -> object:
        return await agent("coder", "go", tsak="x")

    failed = await fail(f)
    assert "'task' is undefined (did you mean 'tsak'?)" in str(failed)


async def test_unknown_tool_fails_the_run() -> None:
    @flow(team=Team([Agent("coder", tools=["read_fiel"])]))
    async def f() -> object:
        return await parallel(lambda i: agent("coder", "go"), n=2)

    failed = await fail(f)
    assert "unknown tools ['read_fiel']" in str(failed)


async def test_a_handoff_the_flow_makes_along_an_undeclared_edge_fails_the_run() -> None:
    @flow(team=Team([Agent("coder"), Agent("arbiter")]))
    async def f() -> object:
        async def branch(i: int) -> object:
            draft = await agent("coder", f"t{i}")
            return await agent("arbiter", draft)

        return await parallel(branch, n=2)

    failed = await fail(f)
    assert isinstance(failed.result.error, TopologyError)
    refused = [e for e in failed.result.events if e.type == "handoff_refused"]
    assert refused and not [
        e for e in failed.result.events if e.type == "model_called" and e.agent == "arbiter"
    ]


async def test_an_exception_from_flow_code_in_a_branch_fails_the_run_and_cancels_siblings() -> (
    None
):
    @flow(team=Team([Agent("w")]))
    async def f() -> object:
        async def branch(i: int) -> object:
            if i == 1:
                return len(42)  # type: ignore[arg-type]
            return (await agent("w", f"t{i}")).text

        return await parallel(branch, n=3)

    failed = await fail(f)
    assert isinstance(failed.result.error, TypeError)
    assert "TypeError" in str(failed) and f"{HERE}:" in str(failed)
    assert failed.result.output is None


async def test_a_fault_of_the_world_is_a_failed_outcome_and_the_run_goes_on() -> None:
    def model(req: Any) -> str:
        if "1" in req.prompt:
            raise ModelUnavailable("server kept answering 503")
        return "fine"

    @flow(team=Team([Agent("w")]))
    async def f() -> object:
        return await parallel(lambda i: agent("w", f"t{i}"), n=3)

    result = await run(f, model=FunctionModel(model), events="memory")
    assert result.status == "ok"
    assert isinstance(result.output[1], Failed)
    assert [o.value.text for o in (result.output[0], result.output[2])] == ["fine", "fine"]


async def test_raise_on_failure_false_returns_the_failed_result() -> None:
    @flow
    async def f() -> None:
        raise KeyError("oops")

    result = await run(f, model=echo(), events="memory", raise_on_failure=False)
    assert result.status == "failed" and isinstance(result.error, KeyError)


# -- operator misuse ---------------------------------------------------------------------------


async def test_a_coroutine_where_a_factory_is_expected_says_so_without_warnings() -> None:
    @flow(team=Team([Agent("coder")]))
    async def f() -> object:
        return await parallel(agent("coder", "go"), n=3)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        failed = await fail(f)
        gc.collect()
    message = str(failed)
    assert "parallel(..., n=3) expected a factory" in message and "coroutine" in message
    assert not [w for w in caught if "never awaited" in str(w.message)]


async def test_compact_of_a_non_outcome_names_what_it_expected() -> None:
    @flow
    async def f() -> object:
        return compact(42)  # type: ignore[arg-type]

    failed = await fail(f)
    assert "compact() expected outcomes" in str(failed)


async def test_compact_of_an_unawaited_parallel_says_await_it() -> None:
    @flow
    async def f() -> object:
        return compact(parallel(lambda i: i, n=2))  # type: ignore[arg-type]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        failed = await fail(f)
        gc.collect()
    assert "await it first" in str(failed)
    assert not [w for w in caught if "never awaited" in str(w.message)]


# -- run options -------------------------------------------------------------------------------


def test_a_misspelled_run_option_is_an_error_not_a_flow_input() -> None:
    @flow
    async def f(task: str) -> str:
        return task

    with pytest.raises(ConfigError, match=r"'budgt' \(did you mean the run option budget=\?\)"):
        run_sync(f, model=echo(), task="x", budgt={"tokens": 5})
    with pytest.raises(ConfigError, match=r"'tsk' \(did you mean the input task=\?\)"):
        run_sync(f, model=echo(), tsk="x")
    assert run_sync(f, model=echo(), task="x", events="memory").output == "x"
