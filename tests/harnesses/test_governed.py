"""A harness under the run's budget and topology: small real programs as hostile harnesses."""

from __future__ import annotations

import json
import socket
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from swarmflow import Agent, Team, agent, flow, run_sync
from swarmflow.core.errors import AgentFailed, BudgetExhausted, TopologyError
from swarmflow.core.messages import Message, ModelRequest, ToolCall
from swarmflow.harnesses import Harness, running
from swarmflow.rails import Amend, Hook, RailContext, Veto, rail
from swarmflow.testing import FunctionModel, tool_call
from tests.harnesses.programs import command
from tests.harnesses.support import of_type, processes_with
from tests.support.git_repo import make_repo


def test_a_harness_that_never_stops_is_cut_at_its_allowance(tmp_path: Path) -> None:
    marker = f"forever-{uuid.uuid4().hex}"
    looper = Agent("looper", workspace="local", allowance=2_000,
                   harness=Harness(command=command("forever", marker), task="stdin"))  # fmt: skip

    @flow(team=Team([looper]))
    async def loop() -> str:
        try:
            await agent("looper", "never stop")
        except BudgetExhausted as exc:
            return exc.reason
        return "it stopped by itself"

    result = run_sync(loop, model=FunctionModel(lambda r: "a" * 400))
    assert result.output == "budget exhausted before model call"
    (refused,) = [e for e in of_type(result, "harness_refused") if e.kind == "budget"]
    assert refused.status == 429 and "looper" in refused.reason
    (ended,) = of_type(result, "harness_ended")
    assert ended.reason == "budget exhausted before model call" and ended.exit_code is None
    assert result.usage["looper"].tokens_in + result.usage["looper"].tokens_out <= 2_000
    assert processes_with(marker) == []


def test_the_board_commands_act_as_this_agent_along_its_edges(tmp_path: Path) -> None:
    team = Team(
        [Agent("poster", workspace="local",
               harness=Harness(command=command("board", "reviewer", "outsider"), task="stdin",
                               board=True)),
         Agent("reviewer"), Agent("outsider")],
        edges=[("poster", "reviewer")],
    )  # fmt: skip

    @flow(team=team)
    async def post() -> str:
        return (await agent("poster", "talk")).text

    result = run_sync(post, model=FunctionModel(lambda r: "unused"))
    lines = result.output.splitlines()
    assert lines[0].startswith("create_thread: 0:") and lines[1].startswith("send_message: 0:")
    assert lines[2].startswith("create_thread: 1: ") and "refused (403)" in lines[2]
    assert lines[3].startswith("send_message: 1: ") and "refused (403)" in lines[3]
    refused = of_type(result, "board_refused")
    assert {(e.route, e.source, e.target) for e in refused} >= {
        ("invitation", "poster", "outsider"),
        ("mention", "poster", "outsider"),
    }
    (posted,) = of_type(result, "board_message_posted")
    assert (posted.sender, posted.mentions) == ("poster", ["reviewer"])


def test_another_agents_product_is_refused_at_the_endpoint(tmp_path: Path) -> None:
    notes = tmp_path / "shared"
    notes.mkdir()
    leaker = Agent("leaker", workspace="local",
                   harness=Harness(command=command("leak", "notes.txt"), task="stdin"))  # fmt: skip
    secret = "The plan is to rewrite the billing service in COBOL by Friday."
    asked: list[str] = []

    def policy(request: ModelRequest) -> str:
        asked.append(request.agent)
        return secret

    @flow(team=Team([Agent("writer"), leaker]))
    async def launder() -> str:
        written = await agent("writer", "write the plan")
        (notes / "notes.txt").write_text(written.text)  # handed over through a file
        return (await agent("leaker", "review notes.txt", workspace=notes)).text

    result = run_sync(launder, model=FunctionModel(policy))
    assert result.output.startswith("status 403: refused to hand a value from 'writer'")
    assert asked == ["writer"]  # nothing of the leaker's reached the model
    (refused,) = of_type(result, "handoff_refused")
    assert (refused.source, refused.target, refused.via) == ("writer", "leaker", "harness request")
    (counted,) = of_type(result, "harness_refused")
    assert (counted.kind, counted.status) == ("handoff", 403)


CODER = Agent(
    "coder",
    workspace="worktree",
    card="Keep each change small.",
    harness=Harness(command=command("coder", "{task}")),
)


def coder_policy(request: ModelRequest) -> str:
    if request.prompt == "summarise":
        return "answer() returns 42"
    assert request.prompt == "Keep each change small.\n\nmake answer() return 42"  # card first
    return "def answer():\n    return 42\n"


def test_the_harness_patch_reaches_only_along_an_edge(tmp_path: Path) -> None:
    @flow(team=Team([CODER, Agent("reviewer"), Agent("stranger")], edges=[("coder", "reviewer")]))
    async def hand_on() -> str:
        made = await agent("coder", "make answer() return 42")
        assert made.patch is not None and made.provenance == {"coder"}
        assert (await agent("reviewer", made.patch)).text == "fine"
        try:
            await agent("stranger", f"look: {made.patch.diff}")
        except TopologyError as exc:
            return exc.message
        return "handed over"

    result = run_sync(hand_on, model=FunctionModel(lambda r: coder_policy(r) if r.agent == "coder"
                                                   else "fine"), repo=make_repo(tmp_path))  # fmt: skip
    assert result.output.startswith("refused to hand a value from 'coder' to 'stranger'")


def test_a_streamed_request_passes_its_tool_schema_through(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"command": {"type": "string", "minLength": 1}},
              "required": ["command"], "additionalProperties": False}  # fmt: skip
    seen: list[ModelRequest] = []

    def policy(request: ModelRequest) -> ToolCall:
        seen.append(request)
        return tool_call("bash", command="ls")

    streamer = Agent("streamer", workspace="local", max_output_tokens=300,
                     harness=Harness(command=command("stream", json.dumps(schema)), task="stdin"))  # fmt: skip

    @flow(team=Team([streamer]))
    async def streamed() -> str:
        return (await agent("streamer", "go")).text

    result = run_sync(streamed, model=FunctionModel(policy))
    answer = json.loads(result.output)
    assert answer == {"calls": [{"name": "bash", "arguments": '{"command": "ls"}'}],
                      "finish": "tool_calls"}  # fmt: skip
    ((tool,),) = [r.tools for r in seen]
    assert (tool.name, tool.description, tool.parameters) == ("bash", "run it", schema)
    assert seen[0].max_tokens <= 300  # the agent's cap, whatever the harness asks
    (called,) = of_type(result, "model_called")
    assert called.request_shape == {"messages": {"user": 1}, "tools": ["bash"], "stream": True,
                                    "max_tokens": None, "other": ["top_p"]}  # fmt: skip


def test_a_program_that_cannot_run_fails_the_call_in_one_line() -> None:
    missing = Agent("missing", workspace="local",
                    harness=Harness(command=["no-such-harness-program", "{task}"]))  # fmt: skip

    @flow(team=Team([missing]))
    async def absent() -> str:
        try:
            await agent("missing", "go")
        except AgentFailed as exc:
            return exc.message
        return "it ran"

    result = run_sync(absent, model=FunctionModel(lambda r: "x"))
    assert result.output.startswith("agent 'missing' failed: harness exited with code 127: ")
    assert "no-such-harness-program" in result.output and "\n" not in result.output


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"command": "mini -t {task}"}, "command is a list of arguments, not one string"),
        ({"command": ["prog"]}, 'task="argument" needs {task} in the command'),
        ({"command": ["prog", "{taks}"]}, "unknown placeholder {taks}"),
        ({"command": ["prog", "{task}"], "answer": "file"}, "needs {answer_file}"),
    ],
)
def test_a_broken_harness_declaration_says_what_is_wrong(given: dict, said: str) -> None:
    with pytest.raises(ValueError, match=said.replace("{", r"\{").replace("(", r"\(")):
        Harness(**given)


def test_a_harness_agent_needs_a_workspace() -> None:
    with pytest.raises(ValueError, match="runs a harness, which works in a workspace"):
        Agent("coder", harness=Harness(command=["prog", "{task}"]))


def test_in_the_sandbox_a_harness_reaches_its_endpoint_and_no_service_of_the_host(
    tmp_path: Path,
) -> None:
    """A service listening on the host's loopback is out of reach; the run's endpoint is not."""
    if (problem := running.bwrap_problem()) is not None:
        pytest.skip(problem)
    with socket.create_server(("127.0.0.1", 0)) as service:  # listening: a connect would land
        port = service.getsockname()[1]
        prober = Agent("prober", workspace="local",
                       harness=Harness(command=command("probe", "127.0.0.1", str(port)),
                                       task="stdin"))  # fmt: skip

        @flow(team=Team([prober]))
        async def reach() -> str:
            return (await agent("prober", "probe")).text

        result = run_sync(reach, model=FunctionModel(lambda r: "here"))
    assert result.output.splitlines()[0].startswith("host: unreachable"), result.output
    assert result.output.splitlines()[1] == "endpoint: 200"
    (started,) = of_type(result, "harness_started")
    assert started.sandboxed


def test_the_rails_hold_for_a_harness_model_calls(tmp_path: Path) -> None:
    """An amending rail changes what the model is sent; a vetoing one ends the call, its
    request answered 403 and nothing sent, as a native call's veto does."""
    seen: list[str] = []

    def remind(ctx: RailContext) -> Amend:
        request: ModelRequest = ctx.payload
        extra = Message("user", "Remember: be terse.")
        return Amend(replace(request, messages=(*request.messages, extra)))

    def policy(request: ModelRequest) -> str:
        seen.append(request.messages[-1].content or "")
        return "a" * 40

    calls = iter(range(100))
    rails = [
        rail("terse", [Hook.BEFORE_MODEL_CALL], remind, priority=2),
        rail("two calls", [Hook.BEFORE_MODEL_CALL],
             lambda ctx: Veto("two calls are enough") if next(calls) >= 2 else None),
    ]  # fmt: skip
    looper = Agent("looper", workspace="local",
                   harness=Harness(command=command("forever", "rails"), task="stdin"))  # fmt: skip

    @flow(team=Team([looper]))
    async def loop() -> str:
        return (await agent("looper", "never stop")).text

    result = run_sync(loop, model=FunctionModel(policy), rails=rails)
    (vetoed,) = of_type(result, "rail_vetoed")  # stopped, not failed, as a native session is
    assert (vetoed.hook, vetoed.reason) == ("before_model_call", "two calls are enough")
    (ended,) = [e for e in of_type(result, "session_ended") if e.agent == "looper"]
    assert (ended.state, ended.reason) == ("stopped", "vetoed by a rail")
    assert seen == ["Remember: be terse.", "Remember: be terse."]  # the third was never sent
    (refused,) = [e for e in of_type(result, "harness_refused") if e.kind == "rail"]
    assert refused.status == 403 and "two calls are enough" in refused.reason
    (finished,) = of_type(result, "harness_ended")
    assert finished.reason == "vetoed by a rail" and finished.calls == 2
