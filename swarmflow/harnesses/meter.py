"""The metering endpoint: a harness's model calls, governed as a native session's are.

Each `POST /v1/chat/completions` from the program, in this order:

1. its key is checked (401 otherwise) and its body read as a chat-completions request (400);
2. everything it would show the model (messages, tool-call arguments, and each tool's name,
   description and schema) passes the handoff rule: a text holding another agent's product
   that has no edge to this agent is answered 403, recorded (`handoff_refused`, via "harness
   request"), and nothing is sent;
3. it goes through the metered call (`calls.metered`, purpose "harness") as a native call
   does: the step limit, the reservation on every ledger the agent's calls charge, the cap on
   `max_tokens`, the rails, the write barrier, the journal, the model, settling, the estimator
   and `model_called` (with the request's shape). A refusal is answered 429 (the step limit,
   the budget) or 403 (a rail) and ends the call; a call that took a ledger over its limit
   ends the call ("budget exceeded after model call") and is answered 429;
4. the answer goes back as a `chat.completion`, or as server-sent events when it asked to
   stream.
"""

from __future__ import annotations

import hmac
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from swarmflow.calls.metered import Refusal, metered_call
from swarmflow.core.errors import TopologyError
from swarmflow.core.harness_spec import Harness
from swarmflow.core.ids import new_session_id
from swarmflow.core.messages import ModelRequest, ModelResponse
from swarmflow.core.states import EndReason
from swarmflow.core.tokens import prompt_units
from swarmflow.harnesses.http_server import HttpRequest, Reply, error_reply
from swarmflow.harnesses.wire import ChatRequest, WireError, chunks, completion, parse_request
from swarmflow.record.events import HarnessRefused
from swarmflow.sessions.outside import OutsideTurn
from swarmflow.sessions.prefix import PrefixMeter

CHAT_PATH = "/v1/chat/completions"
MODEL_TIMEOUT = 300.0
"""Seconds one forwarded model call may take before it is answered 504."""

Stop = Callable[[EndReason, str], None]
"""Ends the harness call (its program is killed) with a session end reason and detail."""


@dataclass
class Meter:
    """The endpoint of one harness call: its outside turn, its key."""

    turn: OutsideTurn
    harness: Harness
    key: str
    stop: Stop
    refusals: Counter[str] = field(default_factory=Counter)
    ended: bool = False
    _prefix: PrefixMeter = field(default_factory=PrefixMeter)

    async def handle(self, request: HttpRequest) -> Reply:
        """Answer one request of the program."""
        if not self._authorised(request):
            return self.refuse("unauthorized", 401, "a missing or wrong API key for this endpoint")
        if request.method == "GET" and request.path == "/v1/models":
            listed = {"id": self.harness.model_name, "object": "model", "owned_by": "swarmflow"}
            return Reply(200, json.dumps({"object": "list", "data": [listed]}).encode())
        if request.method != "POST" or request.path != CHAT_PATH:
            return self.refuse("not_found", 404, f"this endpoint serves POST {CHAT_PATH} only")
        if self.ended:
            return self.refuse("ended", 429, "the agent's call has ended; send no more requests")
        try:
            chat = parse_request(request.body)
        except WireError as exc:
            return self.refuse("bad_request", 400, str(exc))
        return await self._forward(chat)

    def refuse(self, kind: str, status: int, reason: str, *, record: bool = False) -> Reply:
        """Count the refusal (record the first of its kind, or every one when `record`) and
        answer it in the OpenAI error format."""
        self.count(kind, reason, status, record=record)
        kinds = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}
        return error_reply(status, reason, kinds.get(status, "invalid_request_error"), kind)

    def count(self, kind: str, reason: str, status: int = 0, *, record: bool = False) -> None:
        """Count a request turned away; the first of each kind is recorded."""
        self.refusals[kind] += 1
        if record or self.refusals[kind] == 1:
            self.turn.emit(
                HarnessRefused, harness=self.harness.name, kind=kind, status=status, reason=reason
            )

    def _authorised(self, request: HttpRequest) -> bool:
        given = request.headers.get("authorization", "").encode("latin-1")
        return hmac.compare_digest(given, f"Bearer {self.key}".encode())

    async def _forward(self, chat: ChatRequest) -> Reply:
        turn = self.turn
        request = self._model_request(chat)
        try:
            turn.check(request)
        except TopologyError as exc:
            return self.refuse("handoff", 403, exc.message)
        try:
            called = await metered_call(
                turn.caller, turn.model, request, steps=turn.steps,
                sent_units=prompt_units(request.messages, request.tools),
                measure=self._prefix.measure, recorded={"request_shape": _shape(chat)},
                timeout=MODEL_TIMEOUT,
            )  # fmt: skip
        except TimeoutError:
            return self.refuse("model_error", 504, f"the model took over {MODEL_TIMEOUT:g}s")
        except Exception as exc:  # the model's fault is the harness's answer, not the run's
            return self.refuse("model_error", 502, f"the model failed: {type(exc).__name__}: {exc}")
        turn.count(called)
        if called.refusal is not None:
            return self._refused(called.refusal)
        if called.over:
            over = ", ".join(called.over)
            self._end(EndReason.BUDGET_EXCEEDED_AFTER_CALL, f"over the limit of {over}")
            why = f"budget exceeded after this call: over the limit of {over}"
            return self.refuse("budget", 429, why, record=True)
        assert called.response is not None
        return _answered(chat, called.response, self.harness.model_name)

    def _model_request(self, chat: ChatRequest) -> ModelRequest:
        turn = self.turn
        most = turn.max_output_tokens
        asked = min(chat.max_tokens, most) if chat.max_tokens is not None else most
        units = prompt_units(chat.messages, chat.tools)
        estimate = turn.estimator.tokens(units, turn.model_name)
        return chat.to_model(turn.caller.agent, turn.model_name, asked, estimate)

    def _refused(self, refusal: Refusal) -> Reply:
        """A call the metered call refused: the program's call ends, the request is refused."""
        self._end(refusal.reason, refusal.detail)
        if refusal.kind == "rail":
            return self.refuse("rail", 403, refusal.detail, record=True)
        if refusal.kind == "step_limit":
            return self.refuse(
                "step_limit", 429, f"step limit reached: {refusal.detail}", record=True
            )
        return self.refuse("budget", 429, refusal.detail, record=True)

    def _end(self, reason: EndReason, detail: str) -> None:
        if not self.ended:
            self.ended = True
            self.stop(reason, detail)


def _answered(chat: ChatRequest, answer: ModelResponse, default_name: str) -> Reply:
    call_id = f"chatcmpl-{new_session_id('h')}"
    name = chat.model or default_name
    if chat.stream:
        return Reply(200, events=list(chunks(answer, call_id, name)))
    return Reply(200, json.dumps(completion(answer, call_id, name)).encode())


def _shape(chat: ChatRequest) -> dict[str, Any]:
    roles = Counter(m.role for m in chat.messages)
    return {
        "messages": dict(sorted(roles.items())),
        "tools": [t.name for t in chat.tools],
        "stream": chat.stream,
        "max_tokens": chat.max_tokens,
        "other": list(chat.extras),
    }
