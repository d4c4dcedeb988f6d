"""The metering endpoint: a harness's model calls, governed as a native session's are.

Each `POST /v1/chat/completions`: key (401), body (400), the program's steps read (a repeat is
429, `harnesses.transcript`), the handoff rule on all the request would show the model (403),
then the metered call (`calls.metered`, purpose "harness": limits 429, rails 403, barrier,
journal, model, settling, one `model_called`). The answer goes back whole or streamed.
"""

from __future__ import annotations

import hmac
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from swarmflow.calls.metered import Refusal, metered_call
from swarmflow.core.errors import TopologyError
from swarmflow.core.harness_spec import Harness
from swarmflow.core.states import EndReason
from swarmflow.harnesses import replies
from swarmflow.harnesses.http_server import HttpRequest, Reply
from swarmflow.harnesses.transcript import HarnessSteps
from swarmflow.harnesses.wire import ChatRequest, WireError, parse_request
from swarmflow.record.events import HarnessRefused
from swarmflow.sessions.outside import OutsideTurn
from swarmflow.sessions.prefix import PrefixMeter

CHAT_PATH = "/v1/chat/completions"
MODEL_TIMEOUT = 300.0  # seconds a forwarded model call may take before it is answered 504

Stop = Callable[[EndReason, str], None]  # ends the harness call: its program is killed


@dataclass
class Meter:
    """The endpoint of one harness call: its outside turn, its key."""

    turn: OutsideTurn
    harness: Harness
    key: str
    stop: Stop
    steps: HarnessSteps
    refusals: Counter[str] = field(default_factory=Counter)
    ended: bool = False
    _prefix: PrefixMeter = field(default_factory=PrefixMeter)

    async def handle(self, request: HttpRequest) -> Reply:
        """Answer one request of the program."""
        if not self._authorised(request):
            return self.refuse("unauthorized", 401, "a missing or wrong API key for this endpoint")
        if request.method == "GET" and request.path == "/v1/models":
            return replies.models(self.harness.model_name)
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
        return replies.error(kind, status, reason)

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
        if (loop := self.steps.seen(chat, turn.emit)) is not None:
            self._end(EndReason.LOOP_BLOCK, loop)
            return self.refuse("loop_block", 429, f"loop block limit reached: {loop}", record=True)
        request = replies.model_request(turn, chat)
        try:
            turn.check(request)
        except TopologyError as exc:
            return self.refuse("handoff", 403, exc.message)
        try:
            called = await metered_call(
                turn.caller, turn.model, request, steps=turn.steps, measure=self._prefix.measure,
                recorded={"request_shape": replies.request_shape(chat)}, timeout=MODEL_TIMEOUT,
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
        self.steps.answered(called.response, turn.steps, turn.emit)
        return replies.answered(chat, called.response, self.harness.model_name)

    def _refused(self, refusal: Refusal) -> Reply:
        """A call the metered call refused: the program's call ends, the request is refused."""
        self._end(refusal.reason, refusal.detail)
        return self.refuse(*replies.refusal_of(refusal), record=True)

    def _end(self, reason: EndReason, detail: str) -> None:
        if not self.ended:
            self.ended = True
            self.stop(reason, detail)
