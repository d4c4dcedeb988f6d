"""`swarmflow[otel]`: a run exported as OpenTelemetry spans after the GenAI conventions.

Checked with the SDK's in-memory exporter, and once over OTLP/HTTP (protobuf) against a real
receiver on loopback that decodes what arrives.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="needs swarmflow[otel]")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from swarmflow import Agent, Team, agent, agent_session, flow, parallel, run
from swarmflow.core.messages import ModelResponse, ToolCall, Usage
from swarmflow.record.sinks.otel import OTelSink
from swarmflow.testing import FunctionModel

TEAM = Team(
    [Agent("coder", tools=["list_files"], workspace="local"), Agent("boss")],
    edges=[("coder", "boss")],
)


@flow(team=TEAM)
async def work(task: str) -> str:
    await parallel(lambda i: agent("coder", f"{task} {i}"), n=2)
    async with agent_session("boss") as boss:
        return (await boss.send("done?")).text


def _policy(request: Any) -> Any:
    if request.agent == "coder" and not any(m.role == "tool" for m in request.messages):
        return ModelResponse(
            tool_calls=(ToolCall("t1", "list_files", '{"path": "."}'),),
            usage=Usage(120, 7, 100),
            model="fn-model",
        )
    return ModelResponse(text="ok", usage=Usage(50, 3), model="fn-model")


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _by_name(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


async def test_a_run_becomes_a_tree_of_genai_spans() -> None:
    provider, exporter = _provider()
    result = await run(
        work, task="fix", model=FunctionModel(_policy, name="fn-model"), sinks=[OTelSink(provider)]
    )
    assert result.status == "ok"
    spans = exporter.get_finished_spans()
    (root,) = _by_name(spans, "invoke_workflow work")
    assert root.parent is None and root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["swarmflow.run_id"] == result.run_id
    sessions = _by_name(spans, "invoke_agent ")
    assert sorted(s.attributes["gen_ai.agent.name"] for s in sessions) == ["boss", "coder", "coder"]
    chats = _by_name(spans, "chat ")
    assert len(chats) == 5  # two coders x two calls, one boss call
    ids = {s.context.span_id: s for s in spans}
    for chat in chats:
        assert chat.kind is SpanKind.CLIENT
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.request.model"] == "fn-model"
        parent = ids[chat.parent.span_id]
        assert parent.name.startswith("invoke_agent ")
        assert (
            parent.attributes["gen_ai.conversation.id"] == chat.attributes["gen_ai.conversation.id"]
        )
        assert chat.start_time <= chat.end_time
    first = next(c for c in chats if c.attributes["gen_ai.usage.input_tokens"] == 120)
    assert first.attributes["gen_ai.usage.output_tokens"] == 7
    assert first.attributes["gen_ai.usage.cache_read.input_tokens"] == 100
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    tools = _by_name(spans, "execute_tool list_files")
    assert len(tools) == 2 and all(t.attributes["gen_ai.tool.call.id"] == "t1" for t in tools)
    operators = [s for s in spans if "swarmflow.operator" in s.attributes]
    assert {s.attributes["swarmflow.operator"] for s in operators} >= {"parallel"}
    for span in spans:  # every span hangs off the run's trace
        assert span.context.trace_id == root.context.trace_id
        assert span.status.status_code is not StatusCode.ERROR


async def test_failures_and_refusals_are_error_spans() -> None:
    team = Team([Agent("a", tools=["list_files"])])

    @flow(team=team)
    async def f() -> str:
        out = await agent("a", "go")
        raise RuntimeError(f"bad flow after {out.text}")

    def policy(request: Any) -> Any:
        if len(request.messages) < 3:
            return ModelResponse(tool_calls=(ToolCall("r1", "run_shell", '{"command": "ls"}'),))
        return "done"

    provider, exporter = _provider()
    result = await run(
        f, model=FunctionModel(policy), sinks=[OTelSink(provider)], raise_on_failure=False
    )
    assert result.status == "failed"
    spans = exporter.get_finished_spans()
    (root,) = _by_name(spans, "invoke_workflow")
    assert root.status.status_code is StatusCode.ERROR and "bad flow" in root.status.description
    (refused,) = _by_name(spans, "execute_tool run_shell")
    assert refused.status.status_code is StatusCode.ERROR
    assert refused.attributes["error.type"] == "tool_refused"


def test_spans_left_open_by_a_killed_run_end_as_errors() -> None:
    from swarmflow.report.log import read_log

    provider, exporter = _provider()
    sink = OTelSink(provider)
    import anyio

    result = anyio.run(lambda: run(work, task="x", model=FunctionModel(_policy, name="fn-model")))
    events = read_log(result.run_dir).events
    cut = [e for e in events if e.type != "run_finished"][: len(events) // 2]
    for event in cut:
        sink.write(event, b"")
    sink.close()
    spans = exporter.get_finished_spans()
    (root,) = _by_name(spans, "invoke_workflow")
    assert root.status.status_code is StatusCode.ERROR
    assert "without run_finished" in root.status.description


class _Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: decodes each protobuf export request it is sent."""

    def do_POST(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.received.append((self.path, self.headers["Content-Type"], request))  # type: ignore[attr-defined]
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test's output free of the server's per-request log lines."""


@pytest.fixture
def receiver() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.received = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


async def test_spans_reach_a_real_otlp_receiver_over_http(receiver: ThreadingHTTPServer) -> None:
    exporter_module = pytest.importorskip(
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
        reason="needs opentelemetry-exporter-otlp-proto-http",
    )
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    host, port = receiver.server_address[:2]
    exporter = exporter_module.OTLPSpanExporter(endpoint=f"http://{host}:{port}/v1/traces")
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    await run(
        work, task="fix", model=FunctionModel(_policy, name="fn-model"), sinks=[OTelSink(provider)]
    )
    provider.shutdown()  # flushes the batch to the receiver
    received = receiver.received  # type: ignore[attr-defined]
    assert received and all(path == "/v1/traces" for path, _, _ in received)
    assert received[0][1] == "application/x-protobuf"
    spans = [
        span
        for _, _, request in received
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    names = {span.name for span in spans}
    assert "invoke_workflow work" in names and "chat fn-model" in names
    chat = next(span for span in spans if span.name == "chat fn-model")
    attributes = {a.key: a.value for a in chat.attributes}
    assert attributes["gen_ai.operation.name"].string_value == "chat"
    assert attributes["gen_ai.usage.input_tokens"].int_value in (120, 50)
