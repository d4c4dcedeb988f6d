"""Structured answers and forced tool calls through the server's constrained modes, against the
loopback chat-completions server: which mode goes on the wire, the fallback when a server
rejects it, and what a run records."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from swarmflow import Agent, ConfigError, Team, agent, agent_session, flow, run
from swarmflow.core.capabilities import Capabilities, capabilities_for, server_kind
from swarmflow.core.messages import Message, ModelRequest, OutputSpec, ToolCall, ToolSpec
from swarmflow.models import OpenAIModel
from tests.models.conftest import MakeModel
from tests.support.chat_server import (
    ChatServer,
    Reply,
    completion,
    error_reply,
    json_reply,
    stream_text,
    usage,
)

pytestmark = pytest.mark.allow_model_calls


class Review(BaseModel):
    approved: bool
    score: float
    comments: str


REVIEW = Review(approved=False, score=0.25, comments="add tests").model_dump_json()
READ = ToolSpec(
    "read_file",
    "Read a file from the workspace.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
SUBMIT = ToolSpec(
    "submit",
    "Finish with a summary.",
    {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]},
)
ASK_REVIEW = ModelRequest(
    messages=[Message("user", "review this")],
    output=OutputSpec("Review", Review.model_json_schema()),
)
# llama-cpp-python's server validates response_format.type against "text" | "json_object" and
# answers a failed validation with HTTP 500 and this message; others answer 400 or 422.
LLAMA_CPP_PYTHON_REJECTION = error_reply(
    500,
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}",
)
UNPROCESSABLE = json_reply(
    {"detail": [{"loc": ["body", "response_format", "type"], "msg": "unsupported"}]},
    status=422,
)


def rejecting(*forms: str, reply: Reply = LLAMA_CPP_PYTHON_REJECTION) -> Any:
    """A responder that rejects a response_format of any of `forms` with `reply`."""

    def respond(body: Any) -> Reply | None:
        fmt = body.get("response_format") or {}
        return reply if fmt.get("type") in forms else None

    return respond


@flow(team=Team([Agent("reviewer")]))
async def review_twice(draft: str) -> list[Review]:
    first = await agent("reviewer", draft, output=Review)
    second = await agent("reviewer", draft, output=Review)
    return [first.value, second.value]


# Structured answers ------------------------------------------------------------------------------


async def test_structured_answer_uses_json_schema_mode_and_records_it(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(completion(REVIEW, usage=usage()), completion(REVIEW, usage=usage()))
    result = await run(review_twice, model=make_model(), draft="x = 1")

    assert result.output == [Review.model_validate_json(REVIEW)] * 2
    sent = chat_server.last["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["name"] == "Review"
    assert sent["json_schema"]["schema"] == Review.model_json_schema()
    called = [e for e in result.events if e.type == "model_called"]
    assert [e.output_mode for e in called] == ["json_schema", "json_schema"]


async def test_a_rebuilt_output_type_sends_its_new_schema(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    class Verdict(BaseModel):
        ok: bool

    @flow(team=Team([Agent("reviewer")]))
    async def judge(draft: str) -> Verdict:
        return (await agent("reviewer", draft, output=Verdict)).value

    chat_server.script(completion('{"ok": true}'), completion('{"ok": true, "why": "tidy"}'))
    await run(judge, model=make_model(), draft="x = 1")
    Verdict.model_fields["why"] = FieldInfo(annotation=str)
    Verdict.model_rebuild(force=True)
    result = await run(judge, model=make_model(), draft="x = 1")

    assert result.status == "ok"
    sent = [b["response_format"]["json_schema"]["schema"] for b in chat_server.bodies]
    assert "why" not in sent[0]["properties"]
    assert sent[1] == Verdict.model_json_schema()
    assert sent[1]["required"] == ["ok", "why"]


async def test_rejected_json_schema_steps_down_once_with_a_recorded_reason(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.respond_with(rejecting("json_schema"))
    chat_server.script(completion(REVIEW, usage=usage()), completion(REVIEW, usage=usage()))
    result = await run(review_twice, model=make_model(max_retries=0), draft="x = 1")

    assert result.status == "ok"
    forms = [b.get("response_format", {}).get("type") for b in chat_server.bodies]
    assert forms == ["json_schema", "json_object", "json_object"]  # detected once
    assert chat_server.bodies[1]["response_format"]["schema"] == Review.model_json_schema()
    retried = [e for e in result.events if e.type == "model_retried"]
    assert len(retried) == 1
    assert "rejected response_format 'json_schema'" in retried[0].error
    assert "json_object" in retried[0].error and retried[0].delay == 0.0
    called = [e for e in result.events if e.type == "model_called"]
    assert [e.output_mode for e in called] == ["json_object", "json_object"]


async def test_a_server_without_any_schema_mode_falls_back_to_the_prompt(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.respond_with(rejecting("json_schema", "json_object", reply=UNPROCESSABLE))
    chat_server.script(completion(f"Here: {REVIEW}", usage=usage()), completion(REVIEW))
    result = await run(review_twice, model=make_model(max_retries=0), draft="x = 1")

    assert result.status == "ok"
    assert "response_format" not in chat_server.bodies[-1]
    assert "JSON schema" in chat_server.bodies[-1]["messages"][-1]["content"]
    reasons = [e.error for e in result.events if e.type == "model_retried"]
    assert len(reasons) == 2 and "asked for in the prompt" in reasons[1]
    called = [e for e in result.events if e.type == "model_called"]
    assert [e.output_mode for e in called] == ["prompt", "prompt"]


async def test_an_invalid_constrained_answer_is_asked_again(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    # A server that accepts the mode but does not enforce it: validation still decides.
    chat_server.script(
        completion('{"approved": "perhaps"}', usage=usage()),
        completion(REVIEW, usage=usage()),
    )

    @flow(team=Team([Agent("reviewer")]))
    async def once(draft: str) -> Review:
        async with agent_session("reviewer") as reviewer:
            value: Review = await reviewer.ask(draft, output=Review)
            return value

    result = await run(once, model=make_model(), draft="x")
    assert result.output == Review.model_validate_json(REVIEW)
    assert "not valid" in chat_server.last["messages"][-1]["content"]
    assert chat_server.last["response_format"]["type"] == "json_schema"


async def test_capability_override_and_known_models(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(completion(REVIEW, usage=usage()), completion(REVIEW, usage=usage()))
    prompt_only = make_model(capabilities={"structured": "prompt"})
    response = await prompt_only.complete(ASK_REVIEW)
    assert response.output_mode == "prompt" and "response_format" not in chat_server.last
    old = make_model(model="gpt-3.5-turbo")
    assert (await old.complete(ASK_REVIEW)).output_mode == "prompt"
    assert "response_format" not in chat_server.last


async def test_plain_calls_carry_no_output_and_no_mode(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(completion("plain", usage=usage()), completion(REVIEW, usage=usage()))

    @flow(team=Team([Agent("writer"), Agent("reviewer")], edges=[("writer", "reviewer")]))
    async def both(task: str) -> Review:
        draft = await agent("writer", task)
        return (await agent("reviewer", draft, output=Review)).value

    result = await run(both, model=make_model(), task="t")
    assert "response_format" not in chat_server.bodies[0]
    assert chat_server.bodies[1]["response_format"]["type"] == "json_schema"
    modes = {e.agent: e.output_mode for e in result.events if e.type == "model_called"}
    assert modes == {"writer": None, "reviewer": "json_schema"}


async def test_streamed_structured_answer(chat_server: ChatServer, make_model: MakeModel) -> None:
    chat_server.script(stream_text([REVIEW[:10], REVIEW[10:]]))
    response = await make_model(stream=True).complete(ASK_REVIEW)
    assert Review.model_validate_json(response.text or "") and response.output_mode == "json_schema"
    assert chat_server.last["response_format"]["type"] == "json_schema"


# Forced tool calls -------------------------------------------------------------------------------


def forced(tools: list[ToolSpec], history: list[Message] | None = None) -> ModelRequest:
    messages = history or [Message("system", "be useful"), Message("user", "read a.py")]
    return ModelRequest(messages=messages, tools=tools)


async def test_json_schema_tool_mode_asks_for_the_union_and_reads_a_call(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    answer = json.dumps({"tool": "read_file", "arguments": {"path": "a.py"}})
    chat_server.script(completion(answer, usage=usage()))
    model = make_model(force_tool_choice=True, capabilities={"forced_tools": "json_schema"})

    response = await model.complete(forced([READ, SUBMIT]))

    assert [(c.name, c.parsed_arguments()) for c in response.tool_calls] == [
        ("read_file", {"path": "a.py"})
    ]
    assert response.text is None and response.finish_reason == "tool_calls"
    sent = chat_server.last
    assert "tools" not in sent and "tool_choice" not in sent
    union = sent["response_format"]["json_schema"]["schema"]["anyOf"]
    assert [b["properties"]["tool"]["enum"] for b in union] == [["read_file"], ["submit"]]
    assert union[0]["properties"]["arguments"] == READ.parameters
    system = sent["messages"][0]["content"]
    assert system.startswith("be useful") and "- read_file: Read a file" in system


async def test_json_schema_tool_mode_replays_history_as_plain_turns(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(completion('{"tool": "submit", "arguments": {"summary": "ok"}}'))
    call = ToolCall("call_1", "read_file", '{"path": "a.py"}')
    history = [
        Message("user", "read a.py"),
        Message("assistant", None, tool_calls=(call,)),
        Message("tool", "print(1)", tool_call_id="call_1"),
    ]
    model = make_model(force_tool_choice=True, capabilities={"forced_tools": "json_schema"})
    response = await model.complete(forced([READ, SUBMIT], history))

    assert [c.name for c in response.tool_calls] == ["submit"]
    sent = chat_server.last["messages"]
    assert sent[0]["role"] == "system" and "Call exactly one" in sent[0]["content"]
    assert json.loads(sent[2]["content"]) == {"tool": "read_file", "arguments": {"path": "a.py"}}
    assert sent[3] == {"role": "user", "content": "Tool result:\nprint(1)"}
    assert all(m["role"] != "tool" and "tool_calls" not in m for m in sent)


@pytest.mark.parametrize(
    "content",
    ['{"tool": "delete_all", "arguments": {}}', "I will not call a tool", '{"tool": "read_fi'],
)
async def test_json_tool_answer_that_names_no_offered_tool_stays_text(
    chat_server: ChatServer, make_model: MakeModel, content: str
) -> None:
    chat_server.script(completion(content, usage=usage()))
    model = make_model(force_tool_choice=True, capabilities={"forced_tools": "json_schema"})
    response = await model.complete(forced([READ]))
    assert response.tool_calls == () and response.text == content


async def test_json_tool_mode_on_a_server_without_schema_mode_uses_required(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.respond_with(rejecting("json_schema", "json_object"))
    chat_server.script(completion("x"))
    model = make_model(force_tool_choice=True, capabilities={"forced_tools": "json_schema"})
    await model.complete(forced([READ]))
    assert chat_server.last["tool_choice"] == "required" and chat_server.last["tools"]


@pytest.mark.parametrize(
    ("mode", "tools", "expected"),
    [
        ("named", [READ], {"type": "function", "function": {"name": "read_file"}}),
        ("named", [READ, SUBMIT], "required"),
        ("required", [READ], "required"),
    ],
)
async def test_named_and_required_forced_modes(
    chat_server: ChatServer, make_model: MakeModel, mode: str, tools: list[ToolSpec], expected: Any
) -> None:
    chat_server.script(completion("x"))
    model = make_model(force_tool_choice=True, capabilities={"forced_tools": mode})
    await model.complete(forced(tools))
    assert chat_server.last["tool_choice"] == expected
    assert "response_format" not in chat_server.last


async def test_a_forced_json_tool_call_runs_in_a_flow(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(completion('{"tool": "submit", "arguments": {"summary": "all done"}}'))

    @flow(team=Team([Agent("coder", tools=["submit"])]))
    async def one(task: str) -> str:
        return (await agent("coder", task)).text

    model = make_model(force_tool_choice=True)  # loopback: json_schema by default
    result = await run(one, model=model, task="finish")
    assert result.output == "all done"
    executed = [e for e in result.events if e.type == "tool_executed"]
    assert [(e.tool, e.ok) for e in executed] == [("submit", True)]


async def test_a_structured_request_is_not_forced_into_a_tool_call(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(completion(REVIEW))
    model = make_model(force_tool_choice=True)
    request = ModelRequest(messages=ASK_REVIEW.messages, tools=[READ], output=ASK_REVIEW.output)
    response = await model.complete(request)
    assert response.text == REVIEW and chat_server.last["tool_choice"] == "auto"
    assert chat_server.last["response_format"]["type"] == "json_schema"


# The capability table ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("https://api.openai.com/v1", "openai"),
        ("http://127.0.0.1:8080/v1", "local"),
        ("http://localhost:8000/v1", "local"),
        ("http://10.1.2.3:8000/v1", "local"),
        ("http://vllm:8000/v1", "local"),
        ("http://localhost:11434/v1", "ollama"),
        ("https://openrouter.ai/api/v1", "hosted"),
        ("http://[::1]:8080/v1", "local"),
    ],
)
def test_server_kind_from_base_url(url: str, kind: str) -> None:
    assert server_kind(url) == kind


def test_capabilities_lookup_order() -> None:
    assert capabilities_for("gpt-4o-mini", "http://127.0.0.1:1/v1") == Capabilities(
        "json_schema", "required"
    )
    assert capabilities_for("smollm2", "http://127.0.0.1:1/v1").forced_tools == "json_schema"
    assert capabilities_for("any", "https://api.openai.com/v1").forced_tools == "required"
    partial = capabilities_for("gpt-4o", "https://api.openai.com/v1", {"forced_tools": "named"})
    assert partial == Capabilities("json_schema", "named")


@pytest.mark.parametrize(
    ("override", "match"),
    [
        ({"structured": "grammar"}, "structured='grammar'"),
        ({"forced_tool": "named"}, "unknown capability 'forced_tool'"),
    ],
)
def test_bad_capability_override_is_a_config_error(override: Any, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        OpenAIModel("m", base_url="http://127.0.0.1:9/v1", capabilities=override)


def test_rejection_of_another_field_is_not_taken_for_the_mode() -> None:
    model = OpenAIModel("m", base_url="http://127.0.0.1:9/v1")
    plan = model.modes.plan(ASK_REVIEW, force=False)
    assert model.modes.step_down(plan, "messages[0].role must be one of ...") is None
    assert model.modes.form == "json_schema"


async def test_a_4xx_unrelated_to_the_mode_is_not_retried(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    from swarmflow.core.errors import ModelResponseError

    chat_server.script(error_reply(400, "temperature must be at most 2"))
    with pytest.raises(ModelResponseError, match="temperature"):
        await make_model().complete(ASK_REVIEW)
    assert len(chat_server.bodies) == 1


async def test_a_teammate_messaged_during_a_structured_ask_gets_no_schema() -> None:
    from swarmflow.testing import FunctionModel, tool_call

    seen: list[tuple[str, OutputSpec | None]] = []

    def policy(request: ModelRequest) -> object:
        seen.append((request.agent, request.output))
        if request.agent == "helper":
            return "the helper's plain answer"
        if request.messages[-1].role != "tool":
            return tool_call("message_agent", to="helper", text="what do you think?")
        return REVIEW

    @flow(
        team=Team(
            [Agent("reviewer", tools=["message_agent"]), Agent("helper")],
            edges=[("reviewer", "helper"), ("helper", "reviewer")],
        )
    )
    async def ask_with_help(draft: str) -> Review:
        return (await agent("reviewer", draft, output=Review)).value

    result = await run(ask_with_help, model=FunctionModel(policy), draft="x")
    assert result.output == Review.model_validate_json(REVIEW)
    assert [(agent_name, spec is not None) for agent_name, spec in seen] == [
        ("reviewer", True),
        ("helper", False),
        ("reviewer", True),
    ]
    assert seen[0][1] == OutputSpec("Review", Review.model_json_schema())


class CountedReview(Review):
    """`Review` counting how often its JSON schema is built."""

    builds: ClassVar[int] = 0

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        cls.builds += 1
        return super().model_json_schema(*args, **kwargs)


async def test_an_output_types_schema_is_built_once_for_every_call_that_asks_for_it() -> None:
    from swarmflow.testing import FunctionModel

    seen: list[ModelRequest] = []

    def policy(request: ModelRequest) -> str:
        seen.append(request)
        return REVIEW

    @flow(team=Team([Agent("reviewer")]))
    async def three_reviews(draft: str) -> None:
        for _ in range(2):
            await agent("reviewer", draft, output=CountedReview)
        async with agent_session("reviewer") as session:
            await session.ask(draft, CountedReview)

    CountedReview.builds = 0
    result = await run(three_reviews, model=FunctionModel(policy), draft="x")
    result.raise_for_status()
    assert CountedReview.builds == 1  # journal keys, requests and prompts share it
    schema = CountedReview.model_json_schema()
    assert [r.output for r in seen] == [OutputSpec("CountedReview", schema)] * 3
    assert all(json.dumps(schema) in (r.messages[-1].content or "") for r in seen)


async def test_force_first_forces_only_the_first_call_of_a_turn(
    chat_server: ChatServer, make_model: MakeModel
) -> None:
    chat_server.script(
        completion('{"tool": "read_file", "arguments": {"path": "a.py"}}'),
        completion("the answer in words"),
    )
    model = make_model(force_tool_choice="first")
    first = await model.complete(forced([READ]))
    call = ToolCall("call_1", "read_file", '{"path": "a.py"}')
    later = forced(
        [READ],
        [
            Message("user", "read a.py"),
            Message("assistant", None, tool_calls=(call,)),
            Message("tool", "print(1)", tool_call_id="call_1"),
        ],
    )
    second = await model.complete(later)
    assert first.tool_calls and "response_format" in chat_server.bodies[0]
    assert second.text == "the answer in words" and second.tool_calls == ()
    assert chat_server.bodies[1]["tool_choice"] == "auto"
    assert "response_format" not in chat_server.bodies[1]
