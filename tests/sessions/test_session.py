"""Agent sessions through the public API: the inner loop, its stops, and what gets recorded."""

from __future__ import annotations

import pytest

from swarmflow import Agent, AgentFailed, BudgetExhausted, agent, agent_session, team
from swarmflow.core.errors import ModelUnavailable
from swarmflow.core.messages import ModelRequest, ModelResponse, Usage
from swarmflow.core.tokens import estimate_prompt
from swarmflow.testing import FunctionModel, ScriptedModel, Step, tool_call
from tests.runtime.helpers import of_type, run_one


async def test_final_answer_completes() -> None:
    model = ScriptedModel(["all done"])
    result = await run_one([Agent("a")], lambda: agent("a", "hi"), model)
    assert result.status == "ok"
    assert result.output.text == "all done"
    assert (result.output.state, result.output.reason) == ("done", "completed")
    ended = of_type(result, "session_ended")[0]
    assert (ended.state, ended.reason, ended.steps) == ("done", "completed", 1)
    model.assert_complete()


async def test_submit_ends_with_submitted(tmp_path) -> None:
    model = ScriptedModel(
        [tool_call("write_file", path="x.txt", content="1"), tool_call("submit", summary="wrote x")]
    )
    coder = Agent("a", tools=["write_file", "submit"], workspace="local")
    result = await run_one([coder], lambda: agent("a", "go"), model, repo=tmp_path)
    assert result.output.reason == "submitted"
    assert (tmp_path / "x.txt").read_text() == "1"
    executed = of_type(result, "tool_executed")
    assert [e.tool for e in executed] == ["write_file", "submit"]
    assert all(e.ok for e in executed)


async def test_tool_outside_role_is_refused_and_model_told() -> None:
    model = ScriptedModel([tool_call("run_shell", command="rm -rf /"), "ok, I won't"])
    result = await run_one([Agent("a", tools=["read_file"])], lambda: agent("a", "go"), model)
    refused = of_type(result, "tool_refused")
    assert refused and refused[0].tool == "run_shell"
    assert "not among a's tools" in refused[0].reason
    assert not of_type(result, "tool_executed")
    observation = model.requests[1].messages[-1]
    assert observation.role == "tool" and "refused" in (observation.content or "")
    assert result.output.text == "ok, I won't"


async def test_broken_tool_json_is_an_observation_not_a_crash() -> None:
    broken = ModelResponse(
        tool_calls=(
            tool_call("submit", summary="x").__class__(
                id="c1", name="submit", arguments='{"summary": "unterminated'
            ),
        )
    )
    model = ScriptedModel([broken, tool_call("submit", summary="fixed")])
    result = await run_one([Agent("a", tools=["submit"])], lambda: agent("a", "go"), model)
    assert result.status == "ok" and result.output.reason == "submitted"
    first = of_type(result, "tool_executed")[0]
    assert not first.ok and "not valid JSON" in first.result
    assert "not valid JSON" in (model.requests[1].messages[-1].content or "")


async def test_schema_violation_names_the_field() -> None:
    model = ScriptedModel([tool_call("submit", wrong=1), tool_call("submit", summary="ok")])
    result = await run_one([Agent("a", tools=["submit"])], lambda: agent("a", "go"), model)
    first = of_type(result, "tool_executed")[0]
    assert not first.ok and "summary" in first.result


async def test_repeated_identical_call_hits_loop_block(tmp_path) -> None:
    (tmp_path / "f.txt").write_text("same")
    model = FunctionModel(lambda req: tool_call("read_file", path="f.txt"))
    reader = Agent("a", tools=["read_file"], workspace="local")
    result = await run_one([reader], lambda: agent("a", "go"), model, repo=tmp_path)
    assert (result.output.state, result.output.reason) == ("stopped", "loop block limit reached")
    assert len(model.requests) == 3


async def test_step_limit(tmp_path) -> None:
    calls = iter(range(100))
    model = FunctionModel(lambda req: tool_call("list_files", path=".", pattern=f"*{next(calls)}"))
    lister = Agent("a", tools=["list_files"], workspace="local", max_steps=4)
    result = await run_one([lister], lambda: agent("a", "go"), model, repo=tmp_path)
    assert result.output.reason == "step limit reached"
    assert len(model.requests) == 4


async def test_model_error_ends_in_error_and_raises_agent_failed() -> None:
    model = ScriptedModel([Step(error=ModelUnavailable("endpoint down after 5 attempts"))])
    result = await run_one([Agent("a")], lambda: agent("a", "go"), model)
    assert result.status == "failed"
    assert isinstance(result.error, AgentFailed)
    assert "endpoint down" in str(result.error)
    ended = of_type(result, "session_ended")[0]
    assert (ended.state, ended.reason) == ("error", "error")
    assert "ModelUnavailable" in ended.detail
    assert of_type(result, "run_finished")[0].status == "failed"


async def test_allowance_refuses_before_the_model_is_called() -> None:
    model = ScriptedModel(["never"])
    tight = Agent("a", allowance=50, max_output_tokens=100)
    result = await run_one([tight], lambda: agent("a", "go"), model)
    assert isinstance(result.error, BudgetExhausted)
    assert result.error.reason == "budget exhausted before model call"
    assert model.requests == []
    ended = of_type(result, "session_ended")[0]
    assert (ended.state, ended.reason) == ("stopped", "budget exhausted before model call")


async def test_usage_beyond_estimate_stops_after_the_call() -> None:
    huge = Step(text="long answer", usage=Usage(input=10, output=90_000))
    model = ScriptedModel([huge])
    result = await run_one(
        [Agent("a", max_output_tokens=100)],
        lambda: agent("a", "go"),
        model,
        budget={"tokens": 5_000},
    )
    assert isinstance(result.error, BudgetExhausted)
    assert result.error.reason == "budget exceeded after model call"
    assert result.error.output.text == "long answer"  # nothing done is lost


async def test_run_budget_calls_limit() -> None:
    model = FunctionModel(lambda req: "x")

    async def body() -> list[str]:
        out = []
        for _ in range(5):
            out.append((await agent("a", "go")).text)
        return out

    result = await run_one([Agent("a")], body, model, budget={"calls": 3})
    assert isinstance(result.error, BudgetExhausted)
    assert result.error.reason == "budget exceeded"
    assert len(model.requests) == 3


async def test_card_renders_with_variables() -> None:
    model = ScriptedModel(["ok"])
    card = Agent("a", card="You fix {{ repo }}. Be brief.")
    await run_one([card], lambda: agent("a", "go", repo="calc"), model)
    assert model.requests[0].messages[0].content == "You fix calc. Be brief."


async def test_an_inline_card_is_compiled_once_and_rendered_once_per_call(monkeypatch) -> None:
    import jinja2

    compiled: list[str] = []
    rendered: list[dict[str, object]] = []
    compile_source, render = jinja2.Environment.compile, jinja2.Template.render

    def counting_compile(self: jinja2.Environment, source: str, *args: object, **kw: object):
        compiled.append(source)
        return compile_source(self, source, *args, **kw)

    def counting_render(self: jinja2.Template, *args: object, **kw: object) -> str:
        rendered.append(kw)
        return render(self, *args, **kw)

    monkeypatch.setattr(jinja2.Environment, "compile", counting_compile)
    monkeypatch.setattr(jinja2.Template, "render", counting_render)
    model = ScriptedModel(["ok", "ok", "ok"])
    card = Agent("a", card="You fix {{ repo }} (a compiled-once card).")

    async def three_calls() -> None:
        for repo in ("calc", "cli", "calc"):
            await agent("a", "go", repo=repo)

    result = await run_one([card], three_calls, model)
    assert result.status == "ok"
    assert [r.messages[0].content for r in model.requests] == [
        f"You fix {repo} (a compiled-once card)." for repo in ("calc", "cli", "calc")
    ]
    assert compiled == ["You fix {{ repo }} (a compiled-once card)."]
    assert rendered == [{"repo": "calc"}, {"repo": "cli"}, {"repo": "calc"}]


async def test_card_missing_variable_names_template_and_variable(tmp_path) -> None:
    (tmp_path / "coder.md.j2").write_text("Fix {{ task }} in {{ repo }}")
    model = ScriptedModel([])

    async def body() -> object:
        return await agent("a", "go", task="t")

    from swarmflow import Team, flow, run

    @flow(team=Team([Agent("a", card="coder.md.j2")]))
    async def f() -> object:
        return await body()

    f.card_path = (str(tmp_path),)
    result = await run(f, model=model, raise_on_failure=False)
    assert result.status == "failed"
    message = str(result.error)
    assert "coder.md.j2" in message and "'repo' is undefined" in message


async def test_request_exposes_agent_messages_and_tools() -> None:
    seen: list[ModelRequest] = []

    def policy(req: ModelRequest) -> str:
        seen.append(req)
        return "done"

    await run_one(
        [Agent("a", tools=["submit"])], lambda: agent("a", "hello"), FunctionModel(policy)
    )
    assert seen[0].agent == "a"
    assert seen[0].prompt == "hello"
    assert [t.name for t in seen[0].tools] == ["submit"]


async def test_unknown_declared_tool_is_a_clear_error() -> None:
    result = await run_one(
        [Agent("a", tools=["teleport"])], lambda: agent("a", "x"), ScriptedModel([])
    )
    assert result.status == "failed" and "teleport" in str(result.error)


def test_scripted_model_assert_complete_reports_leftovers() -> None:
    model = ScriptedModel({"a": ["1", "2"]})
    with pytest.raises(AssertionError, match="unplayed"):
        model.assert_complete()


# -- the context window covers the whole request -----------------------------------------------

CARD = "You are a careful reviewer. " * 60  # about 560 tokens of role card


def _reader_policy(size: int):  # type: ignore[no-untyped-def]
    """Reads file 0, 1, 2, ... then answers, so the history grows past the budget."""
    calls = iter(range(8))

    def policy(request: ModelRequest) -> ModelResponse | str:
        n = next(calls, None)
        return "done" if n is None else tool_call("read_file", path=f"f{n}.txt")

    return policy


async def test_every_request_fits_the_context_budget_with_card_and_tools(tmp_path) -> None:
    for n in range(8):
        (tmp_path / f"f{n}.txt").write_text(f"line {n}\n" * 120)
    model = FunctionModel(_reader_policy(8))
    reader = Agent("a", card=CARD, tools=["read_file", "list_files"], workspace="local")
    result = await run_one(
        [reader], lambda: agent("a", "read all"), model, repo=tmp_path, context_tokens=2_000
    )
    assert result.output.text == "done"
    assert of_type(result, "context_compacted")
    for request in model.requests:
        assert estimate_prompt(request.messages, request.tools) <= 2_000
        assert request.messages[0].content == CARD  # the card is never compacted away
        assert request.messages[1].content == "read all"  # nor the task


async def test_an_oversized_observation_is_cut_with_a_note_not_dropped(tmp_path) -> None:
    (tmp_path / "big.txt").write_text("0123456789abcdef\n" * 3_000)  # about 17,000 tokens
    model = ScriptedModel([tool_call("read_file", path="big.txt"), "summarised"])
    reader = Agent("a", tools=["read_file"], workspace="local")
    result = await run_one(
        [reader], lambda: agent("a", "read it"), model, repo=tmp_path, context_tokens=2_000
    )
    assert result.output.text == "summarised"
    second = model.requests[1]
    assert estimate_prompt(second.messages, second.tools) <= 2_000
    ask, observation = second.messages[-2], second.messages[-1]
    assert ask.role == "assistant" and ask.tool_calls[0].name == "read_file"
    assert observation.role == "tool" and observation.tool_call_id == ask.tool_calls[0].id
    content = observation.content or ""
    assert "0123456789abcdef" in content[:100]
    assert "cut to fit the context window" in content
    assert [e.level for e in of_type(result, "context_compacted")] == ["cut_observations"]


async def test_a_card_larger_than_the_context_budget_is_a_clear_error() -> None:
    async def body() -> str:
        try:
            await agent("a", "go")
        except AgentFailed as exc:
            return str(exc)
        return "no error"

    model = ScriptedModel([])
    big = Agent("a", card="word " * 3_000)
    result = await run_one([big], body, model, context_tokens=1_000)
    assert "role card and tool schemas" in result.output
    assert "context budget of 1000 tokens" in result.output
    assert model.requests == []


# -- token estimates learn from settled usage --------------------------------------------------


async def test_the_prompt_estimate_learns_the_servers_count() -> None:
    """A server that counts CJK text at 1.6 times the prior estimate: the first call is
    under-reserved, the ones after it are estimated to within a token or two."""
    text = "请修复这个函数中的错误并添加测试。" * 20
    pairs: list[tuple[int, int]] = []

    def server(request: ModelRequest) -> ModelResponse:
        real = round(1.6 * estimate_prompt(request.messages, request.tools))
        pairs.append((request.estimated_prompt_tokens, real))
        return ModelResponse(text="好的" * len(pairs), usage=Usage(input=real, output=5))

    async def body() -> None:
        async with agent_session("a") as s:
            for _ in range(4):
                await s.send(text)

    await run_one([Agent("a")], body, FunctionModel(server))
    first_estimate, first_real = pairs[0]
    assert first_real > 1.5 * first_estimate
    for estimate, real in pairs[1:]:
        assert abs(estimate - real) <= 0.01 * real + 2


async def test_cjk_is_estimated_conservatively_before_anything_is_learned() -> None:
    text = "请修复这个函数中的错误。" * 50
    seen: list[int] = []

    def policy(request: ModelRequest) -> str:
        seen.append(request.estimated_prompt_tokens)
        return "ok"

    await run_one([Agent("a")], lambda: agent("a", text), FunctionModel(policy))
    assert seen[0] >= len(text)  # at least a token a character


# -- closing -----------------------------------------------------------------------------------


async def test_a_session_closed_before_any_turn_ends_done_through_the_table() -> None:
    """A Team run opens every role's session when it starts; the lead answers at once, so
    the helper's session never has a turn, and the run closes it at the end like every other
    session."""
    roles = [Agent("lead"), Agent("helper")]
    result = await run_one(roles, lambda: team("go", lead="lead"), ScriptedModel(["done"]))
    ended = {e.agent: e for e in of_type(result, "session_ended")}
    helper = ended["helper"]
    assert (helper.state, helper.reason, helper.detail) == (
        "done", "completed", "closed before any turn"
    )  # fmt: skip
