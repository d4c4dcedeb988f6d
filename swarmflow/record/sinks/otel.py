"""Export a run as OpenTelemetry spans, after the GenAI semantic conventions (`swarmflow[otel]`).

`OTelSink` is an event sink: pass it to `run(..., sinks=[OTelSink()])` and it turns the event
stream into spans as it happens, with no change to the runtime. One span per run
(`invoke_workflow`), per operator, per agent session (`invoke_agent`), per model call
(`chat`, with the model and token usage) and per tool call (`execute_tool`). Model and tool
events are recorded when the call ends, so their spans start `latency`/`duration` earlier.
Spans still open when the sink closes (a run killed mid-way) end then, marked as errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from swarmflow.record.events import (
    EventBase,
    ModelCalled,
    OperatorFinished,
    OperatorStarted,
    RunFinished,
    RunStarted,
    SessionEnded,
    SessionStarted,
    ToolExecuted,
    ToolRefused,
)

INSTRUMENTATION = "swarmflow"
_NS = 1_000_000_000


def _ns(seconds: float) -> int:
    return int(seconds * _NS)


@dataclass
class _Open:
    """The spans in flight, by what the events call them."""

    run: Span | None = None
    operators: dict[str, tuple[str, Span]] = field(default_factory=dict)
    """Operator node id -> (its branch, its span)."""
    sessions: dict[str, Span] = field(default_factory=dict)


class OTelSink:
    """An event sink that records the run as OpenTelemetry spans."""

    event_types = frozenset(
        {
            "run_started",
            "run_finished",
            "operator_started",
            "operator_finished",
            "session_started",
            "session_ended",
            "model_called",
            "tool_executed",
            "tool_refused",
        }
    )
    """The events it reads; the event log may skip building the others as objects."""

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        provider = tracer_provider or trace.get_tracer_provider()
        self.tracer: Tracer = provider.get_tracer(INSTRUMENTATION)
        self._open = _Open()
        self._last_ts = 0.0

    def write(self, event: EventBase | None, line: bytes) -> None:
        if event is None:
            return
        self._last_ts = event.ts
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)

    def close(self) -> None:
        """End whatever is still open: the run stopped before it said so."""
        for span in [*self._open.sessions.values(), *(s for _, s in self._open.operators.values())]:
            _end(span, self._last_ts, "the run ended before this span did")
        self._open.sessions.clear()
        self._open.operators.clear()
        run, self._open.run = self._open.run, None
        _end(run, self._last_ts, "the event stream ended without run_finished")

    # -- parents ---------------------------------------------------------------------------

    def _context(self, parent: Span | None) -> Any:
        return trace.set_span_in_context(parent) if parent is not None else None

    def _operator_for(self, branch: str) -> Span | None:
        """The innermost open operator whose branch holds `branch`."""
        best: tuple[int, Span] | None = None
        for op_branch, span in self._open.operators.values():
            inside = not op_branch or branch == op_branch or branch.startswith(op_branch + "/")
            if inside and (best is None or len(op_branch) >= best[0]):
                best = (len(op_branch), span)
        return best[1] if best is not None else self._open.run

    def _start(
        self,
        name: str,
        parent: Span | None,
        start: float,
        attributes: dict[str, Any],
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> Span:
        return self.tracer.start_span(
            name,
            context=self._context(parent),
            kind=kind,
            attributes={k: v for k, v in attributes.items() if v is not None},
            start_time=_ns(start),
        )

    # -- events ----------------------------------------------------------------------------

    def _run_started(self, e: RunStarted) -> None:
        self._open.run = self._start(
            f"invoke_workflow {e.flow}",
            None,
            e.ts,
            {
                "gen_ai.operation.name": "invoke_workflow",
                "gen_ai.workflow.name": e.flow,
                "swarmflow.run_id": e.run_id,
                "swarmflow.agents": list(e.agents),
            },
        )

    def _run_finished(self, e: RunFinished) -> None:
        span, self._open.run = self._open.run, None
        failed = e.status in ("failed", "cancelled")
        _end(
            span,
            e.ts,
            (e.error or e.status) if failed else None,
            {
                "swarmflow.status": e.status,
                "swarmflow.tokens": e.tokens,
                "swarmflow.cost_usd": e.cost,
                "swarmflow.calls": e.calls,
            },
        )

    def _operator_started(self, e: OperatorStarted) -> None:
        parent = self._operator_for(e.branch)
        span = self._start(
            f"{e.operator} {e.node}",
            parent,
            e.ts,
            {
                "swarmflow.operator": e.operator,
                "swarmflow.node": e.node,
                "swarmflow.branch": e.branch,
            },
        )
        self._open.operators[e.node] = (e.branch, span)

    def _operator_finished(self, e: OperatorFinished) -> None:
        _, span = self._open.operators.pop(e.node, (None, None))
        _end(span, e.ts, e.status if e.status != "ok" else None)

    def _session_started(self, e: SessionStarted) -> None:
        agent = e.agent or "?"
        self._open.sessions[e.session or "?"] = self._start(
            f"invoke_agent {agent}",
            self._operator_for(e.branch),
            e.ts,
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent,
                "gen_ai.agent.id": e.session,
                "gen_ai.conversation.id": e.session,
                "gen_ai.request.model": e.model,
                "swarmflow.branch": e.branch,
            },
        )

    def _session_ended(self, e: SessionEnded) -> None:
        _end(
            self._open.sessions.pop(e.session or "?", None),
            e.ts,
            (e.detail or e.reason) if e.state == "error" else None,
            {
                "swarmflow.state": e.state,
                "swarmflow.reason": e.reason,
                "swarmflow.steps": e.steps,
                "swarmflow.tokens": e.tokens,
            },
        )

    def _model_called(self, e: ModelCalled) -> None:
        model = e.model or "unknown"
        span = self._start(
            f"chat {model}",
            self._open.sessions.get(e.session or "?") or self._operator_for(e.branch),
            e.ts - e.latency,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": model,
                "gen_ai.response.model": model,
                "gen_ai.agent.name": e.agent,
                "gen_ai.conversation.id": e.session,
                "gen_ai.usage.input_tokens": e.tokens_in,
                "gen_ai.usage.output_tokens": e.tokens_out,
                "gen_ai.usage.cache_read.input_tokens": e.tokens_cached,
                "gen_ai.response.finish_reasons": [e.finish_reason],
                "swarmflow.step": e.step,
                "swarmflow.cost_usd": e.cost,
                "swarmflow.prompt_tokens": e.prompt_tokens,
                "swarmflow.prefix_tokens": e.prefix_tokens,
                "swarmflow.tool_calls": list(e.tool_calls),
            },
            kind=SpanKind.CLIENT,
        )
        _end(span, e.ts)

    def _tool_executed(self, e: ToolExecuted) -> None:
        span = self._start(
            f"execute_tool {e.tool}",
            self._open.sessions.get(e.session or "?") or self._operator_for(e.branch),
            e.ts - e.duration,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": e.tool,
                "gen_ai.tool.call.id": e.call_id or None,
                "gen_ai.tool.type": "function",
                "gen_ai.agent.name": e.agent,
            },
        )
        _end(span, e.ts, None if e.ok else "tool failed", error_type="tool_error")

    def _tool_refused(self, e: ToolRefused) -> None:
        span = self._start(
            f"execute_tool {e.tool}",
            self._open.sessions.get(e.session or "?") or self._operator_for(e.branch),
            e.ts,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": e.tool,
                "gen_ai.tool.call.id": e.call_id or None,
                "gen_ai.agent.name": e.agent,
            },
        )
        _end(span, e.ts, e.reason, error_type="tool_refused")


def _end(
    span: Span | None,
    ts: float,
    failure: str | None = None,
    attributes: dict[str, Any] | None = None,
    *,
    error_type: str = "error",
) -> None:
    """End `span` at `ts`, with its closing `attributes` and, when `failure` says why, an
    error status; None (a span already ended, or never started) is passed over."""
    if span is None:
        return
    if attributes:
        span.set_attributes(attributes)
    if failure is not None:
        span.set_attribute("error.type", error_type)
        span.set_status(Status(StatusCode.ERROR, failure))
    span.end(end_time=_ns(ts))


_HANDLERS: dict[type[EventBase], Any] = {
    RunStarted: OTelSink._run_started,
    RunFinished: OTelSink._run_finished,
    OperatorStarted: OTelSink._operator_started,
    OperatorFinished: OTelSink._operator_finished,
    SessionStarted: OTelSink._session_started,
    SessionEnded: OTelSink._session_ended,
    ModelCalled: OTelSink._model_called,
    ToolExecuted: OTelSink._tool_executed,
    ToolRefused: OTelSink._tool_refused,
}
