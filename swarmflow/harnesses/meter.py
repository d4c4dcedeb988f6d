"""The metering endpoint: a harness's model calls, governed as a native session's are.

Each `POST /v1/chat/completions` from the program, in this order:

1. its key is checked (401 otherwise) and its body read as a chat-completions request (400);
2. the agent's step limit (`max_steps`) is checked: past it the call ends ("step limit
   reached") and the request is answered 429;
3. what it would show the model is checked against the handoff rule: a text holding another
   agent's product that has no edge to this agent is answered 403, recorded
   (`handoff_refused`, via "harness request"), and nothing is sent;
4. the prompt and the output the agent is expected to write are reserved on every ledger a
   native call of this agent charges (`core.budget.reserve_call`); a request that cannot fit
   is answered 429 with the ledger's own message, and the call ends at its allowance;
5. it is forwarded to the agent's model, `max_tokens` lowered to the reservation's cap, the
   tool schemas passed through as sent;
6. the actual usage is settled, the estimator taught, `model_called` recorded (tokens, cached
   tokens, latency, prompt prefix, the request's shape); a call that took a ledger over its
   limit ends the call ("budget exceeded after model call") and is answered 429;
7. the answer goes back as a `chat.completion`, or as server-sent events when it asked to
   stream.
"""

from __future__ import annotations

import hmac
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from time import perf_counter
from typing import Any

import anyio

from swarmflow.core.budget import CallEstimate, Ledger, Reservation, reserve_call
from swarmflow.core.errors import BudgetExhausted, TopologyError
from swarmflow.core.harness_spec import Harness
from swarmflow.core.ids import new_session_id
from swarmflow.core.messages import ModelRequest, ModelResponse
from swarmflow.core.states import EndReason
from swarmflow.core.tokens import prompt_units
from swarmflow.harnesses.http_server import HttpRequest, Reply, error_reply
from swarmflow.harnesses.transcript import HarnessSteps
from swarmflow.harnesses.wire import ChatRequest, WireError, chunks, completion, parse_request
from swarmflow.record.events import HarnessRefused
from swarmflow.runtime.rails import Hook, Verdict
from swarmflow.sessions.handoff import check_outgoing
from swarmflow.sessions.prefix import PrefixMeter
from swarmflow.sessions.session import AgentSession

CHAT_PATH = "/v1/chat/completions"
MODEL_TIMEOUT = 300.0
"""Seconds one forwarded model call may take before it is answered 504."""

Stop = Callable[[EndReason, str], None]
"""Ends the harness call (its program is killed) with a session end reason and detail."""


@dataclass
class Meter:
    """The endpoint of one harness call: its session, its ledgers, its key."""

    session: AgentSession
    harness: Harness
    ledgers: list[Ledger]
    key: str
    stop: Stop
    refusals: Counter[str] = field(default_factory=Counter)
    ended: bool = False
    _prefix: PrefixMeter = field(default_factory=PrefixMeter)
    steps: HarnessSteps = field(default_factory=HarnessSteps)
    """The program's tool calls and results, recorded (`harnesses.transcript`)."""

    async def handle(self, request: HttpRequest) -> Reply:
        """Answer one request of the program."""
        if not self._authorised(request):
            return self.refuse("unauthorized", 401, "a missing or wrong API key for this endpoint")
        if request.method == "GET" and request.path == "/v1/models":
            return Reply(
                200,
                json.dumps(
                    {
                        "object": "list",
                        "data": [
                            {
                                "id": self.harness.model_name,
                                "object": "model",
                                "owned_by": "swarmflow",
                            }
                        ],
                    }
                ).encode(),
            )
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
            self.session.emit(
                HarnessRefused, harness=self.harness.name, kind=kind, status=status, reason=reason
            )

    def _authorised(self, request: HttpRequest) -> bool:
        given = request.headers.get("authorization", "").encode("latin-1")
        return hmac.compare_digest(given, f"Bearer {self.key}".encode())

    async def _forward(self, chat: ChatRequest) -> Reply:
        session, agent = self.session, self.session.agent
        if (loop := self.steps.seen(chat, session)) is not None:
            self._end(EndReason.LOOP_BLOCK, loop)
            return self.refuse("loop_block", 429, f"loop block limit reached: {loop}", record=True)
        limit = agent.max_steps
        if limit is not None and session.steps >= limit:
            detail = f"{session.steps} of {limit} model calls used"
            self._end(EndReason.STEP_LIMIT, detail)
            return self.refuse("step_limit", 429, f"step limit reached: {detail}", record=True)
        try:
            check_outgoing(
                session.run, agent.name, chat.shown_text(), via="harness request", agent=agent.name
            )
        except TopologyError as exc:
            return self.refuse("handoff", 403, exc.message)
        request = self._model_request(chat)
        try:
            reservation = reserve_call(self.ledgers, self._estimate(request))
        except BudgetExhausted as exc:
            self._end(EndReason(exc.reason), exc.message)
            return self.refuse("budget", 429, exc.message, record=True)
        return await self._call(chat, request, reservation)

    def _model_request(self, chat: ChatRequest) -> ModelRequest:
        session = self.session
        most = session.agent.max_output_tokens
        asked = min(chat.max_tokens, most) if chat.max_tokens is not None else most
        units = prompt_units(chat.messages, chat.tools)
        estimate = session.run.state.estimator.tokens(units, session.profile.model_name)
        return chat.to_model(session.agent.name, session.profile.model_name, asked, estimate)

    def _estimate(self, request: ModelRequest) -> CallEstimate:
        expected = self.session.run.state.estimator.expected_output(self.session.agent.name)
        price = self.session.profile.price
        return CallEstimate(request.estimated_prompt_tokens, expected, request.max_tokens, price)

    async def _call(self, chat: ChatRequest, request: ModelRequest, held: Reservation) -> Reply:
        request = _capped(request, held.cap)
        verdict = await self.session.rails_at(Hook.BEFORE_MODEL_CALL, request)
        if verdict.veto is not None:
            held.release()
            return self._vetoed(Hook.BEFORE_MODEL_CALL, verdict)
        request = _capped(verdict.payload, held.cap)  # amended or not: a rail cannot lift the cap
        self.session.run.deps.write_ahead()  # what came before the call is on disk first
        started = perf_counter()
        try:
            with anyio.fail_after(MODEL_TIMEOUT):
                answer = await self.session.model.complete(request)
        except TimeoutError:
            held.release()
            return self.refuse("model_error", 504, f"the model took over {MODEL_TIMEOUT:g}s")
        except Exception as exc:  # the model's fault is the harness's answer, not the run's
            held.release()
            return self.refuse("model_error", 502, f"the model failed: {type(exc).__name__}: {exc}")
        except BaseException:
            held.release()
            raise
        over = self._settle(chat, request, answer, held, perf_counter() - started)
        verdict = await self.session.rails_at(Hook.AFTER_MODEL_CALL, answer)
        if verdict.veto is not None:  # settled first: the call was answered and is paid for
            return self._vetoed(Hook.AFTER_MODEL_CALL, verdict)
        answer = verdict.payload
        if over:
            self._end(EndReason.BUDGET_EXCEEDED_AFTER_CALL, f"over the limit of {', '.join(over)}")
            return self.refuse(
                "budget",
                429,
                f"budget exceeded after this call: over the limit of {', '.join(over)}",
                record=True,
            )
        self.steps.answered(answer, self.session.steps)
        call_id = f"chatcmpl-{new_session_id('h')}"
        name = chat.model or self.harness.model_name
        if chat.stream:
            return Reply(200, events=list(chunks(answer, call_id, name)))
        return Reply(200, json.dumps(completion(answer, call_id, name)).encode())

    def _settle(
        self,
        chat: ChatRequest,
        request: ModelRequest,
        response: ModelResponse,
        held: Reservation,
        latency: float,
    ) -> list[str]:
        """Charge the usage and record the call, exactly as a native session's call settles."""
        return self.session.settle_call(
            request,
            response,
            held,
            latency,
            sent_units=prompt_units(request.messages, request.tools),
            prefix=self._prefix,
            request_shape=_shape(chat),
        )

    def _vetoed(self, hook: Hook, verdict: Verdict) -> Reply:
        """A rail vetoed the call: refused as a native session's call is, and the call ends."""
        reason = verdict.veto.reason if verdict.veto is not None else ""
        detail = f"rail {verdict.rail!r} vetoed {hook.value}: {reason}"
        self._end(EndReason.VETOED, detail)
        return self.refuse("rail", 403, detail, record=True)

    def _end(self, reason: EndReason, detail: str) -> None:
        if not self.ended:
            self.ended = True
            self.stop(reason, detail)


def _capped(request: ModelRequest, cap: int | None) -> ModelRequest:
    """`request` asking for no more output than the reservation allows."""
    if cap is None or request.max_tokens <= cap:
        return request
    return replace(request, max_tokens=cap)


def _shape(chat: ChatRequest) -> dict[str, Any]:
    roles = Counter(m.role for m in chat.messages)
    return {
        "messages": dict(sorted(roles.items())),
        "tools": [t.name for t in chat.tools],
        "stream": chat.stream,
        "max_tokens": chat.max_tokens,
        "other": list(chat.extras),
    }
