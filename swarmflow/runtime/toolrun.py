"""Running a session's tool calls: gating, argument validation, rails, loop blocking.

A tool error is an observation for the model, never a crash of the run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from swarmflow.core.errors import ConfigError, SwarmflowError, ToolError
from swarmflow.core.events import ToolExecuted, ToolRefused
from swarmflow.core.messages import Message, ToolCall, ToolSpec, estimate_tokens
from swarmflow.core.ports import Tool, ToolContext, ToolResult
from swarmflow.core.states import EndReason
from swarmflow.runtime.rail_registry import Hook

if TYPE_CHECKING:
    from swarmflow.core.team import Agent
    from swarmflow.runtime.context import RunContext
    from swarmflow.runtime.session import AgentSession, Finish

LOOP_BLOCK_LIMIT = 3
RESULT_PREVIEW = 2000


def tool_spec(tool: Tool) -> ToolSpec:
    """The model-facing description of a tool."""
    return ToolSpec(tool.name, tool.description, tool.args.model_json_schema())


class ToolRunner:
    """Executes the tool calls of one session."""

    def __init__(self, session: AgentSession) -> None:
        self.session = session
        self.allowed = frozenset(session.agent.tools)
        self._repeats: list[tuple[str, str, str]] = []

    async def run_all(self, calls: Sequence[ToolCall]) -> Finish | None:
        """Run calls in order; stop at `submit` or when the agent loops without progress."""
        from swarmflow.runtime.session import Finish

        for call in calls:
            result = await self.run_one(call)
            self.session._append(Message("tool", result.text, tool_call_id=call.id, name=call.name))
            if result.submitted:
                return Finish(EndReason.SUBMITTED, _submission_text(result))
            if self._loops(call, result):
                self.session._end(
                    EndReason.LOOP_BLOCK,
                    f"{call.name} called {LOOP_BLOCK_LIMIT} times with the same arguments "
                    "and the same result",
                )
                return None
        return None

    def _loops(self, call: ToolCall, result: ToolResult) -> bool:
        signature = (call.name, call.arguments, result.text)
        if self._repeats and self._repeats[-1] != signature:
            self._repeats.clear()
        self._repeats.append(signature)
        return len(self._repeats) >= LOOP_BLOCK_LIMIT

    async def run_one(self, call: ToolCall) -> ToolResult:
        refusal = self._gate(call)
        if refusal is not None:
            return refusal
        tool = self.session.run.tools.get(call.name)
        try:
            args = _parse(tool, call)
            args = await self.session._rail(Hook.BEFORE_TOOL_CALL, args)
        except ToolError as exc:
            return self._record(call, {}, ToolResult(exc.message, ok=False), 0.0)
        except SwarmflowError as exc:  # a rail veto: refused, and the model is told
            self._refuse(call, exc.message)
            return ToolResult(f"refused: {exc.message}", ok=False)
        started = time.perf_counter()
        result = await self._execute(tool, args)
        result = await self.session._rail(Hook.AFTER_TOOL_CALL, result)
        return self._record(call, args, result, time.perf_counter() - started)

    def _gate(self, call: ToolCall) -> ToolResult | None:
        agent = self.session.agent
        if call.name not in self.allowed:
            have = ", ".join(sorted(self.allowed)) or "none"
            reason = f"tool {call.name!r} is not among {agent.name}'s tools ({have})"
        elif call.name not in self.session.run.tools:
            reason = f"tool {call.name!r} is declared but no such tool is registered"
        else:
            return None
        self._refuse(call, reason)
        return ToolResult(f"refused: {reason}. Use only your own tools.", ok=False)

    def _refuse(self, call: ToolCall, reason: str) -> None:
        self.session._emit(ToolRefused, tool=call.name, call_id=call.id, reason=reason)

    async def _execute(self, tool: Tool, args: BaseModel) -> ToolResult:
        session = self.session
        if tool.needs_workspace and session.workspace is None:
            return ToolResult(
                f"tool {tool.name!r} needs a workspace, and agent {session.agent.name!r} "
                "was declared with workspace='none'",
                ok=False,
            )
        ctx = ToolContext(
            agent=session.agent.name,
            session=session.id,
            workspace=session.workspace,
            emit=session._emit,
            message_agent=session.message_agent_hook(),
        )
        try:
            return await tool.run(args, ctx)
        except ToolError as exc:
            return ToolResult(exc.message, ok=False)
        except SwarmflowError as exc:
            return ToolResult(f"{type(exc).__name__}: {exc}", ok=False)
        except Exception as exc:  # a broken tool is the tool's fault, not the run's
            return ToolResult(
                f"internal error in tool {tool.name}: {type(exc).__name__}: {exc}", ok=False
            )

    def _record(self, call: ToolCall, args: Any, result: ToolResult, duration: float) -> ToolResult:
        shown = args.model_dump(mode="json") if isinstance(args, BaseModel) else call.arguments
        self.session._emit(
            ToolExecuted,
            tool=call.name,
            call_id=call.id,
            arguments=shown,
            ok=result.ok,
            result=result.text[:RESULT_PREVIEW],
            duration=duration,
        )
        return result


def agent_tool_specs(run: RunContext, agent: Agent) -> tuple[list[ToolSpec], int]:
    """An agent's tool schemas and their token estimate (its `AgentProfile` keeps them)."""
    missing = [name for name in agent.tools if name not in run.tools]
    if missing:
        raise ConfigError(
            f"agent {agent.name!r} declares unknown tools {missing}", agent=agent.name
        )
    specs = [tool_spec(run.tools.get(name)) for name in agent.tools]
    return specs, _spec_tokens(specs)


def _spec_tokens(specs: list[ToolSpec]) -> int:
    return sum(
        8 + estimate_tokens(s.description) + estimate_tokens(json.dumps(s.parameters))
        for s in specs
    )


def _parse(tool: Tool, call: ToolCall) -> BaseModel:
    try:
        raw = call.parsed_arguments()
    except ValueError as exc:
        raise ToolError(f"{exc}. Send the call again with a valid JSON object.") from None
    try:
        return tool.args.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(arguments)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ToolError(f"invalid arguments for tool {call.name!r}: {problems}") from None


def _submission_text(result: ToolResult) -> str:
    return result.value if isinstance(result.value, str) else result.text
