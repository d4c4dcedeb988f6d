"""The metering endpoint: a harness's model calls, governed as a native session's are.

Each `POST /v1/chat/completions`: the key is checked (401) and the body read (400); all the
request would show the model (messages, tool-call arguments, each tool's name, description
and schema) passes the handoff rule (403, `handoff_refused` via "harness request"); then it is
the metered call (`calls.metered`, purpose "harness"): step limit and budget (429), rails
(403), write barrier, journal, model, settling, one `model_called` with the request's shape.
First of all, the program's steps are read (`harnesses.transcript`: a repeat is 429).
The answer goes back as a `chat.completion`, or as server-sent events when it asked to stream.
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
from swarmflow.harnesses.replies import answered, model_request, refusal_of, request_shape
from swarmflow.harnesses.transcript import HarnessSteps
from swarmflow.harnesses.wire import ChatRequest, WireError, parse_request
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
    steps: HarnessSteps = field(init=False)
    _prefix: PrefixMeter = field(default_factory=PrefixMeter)

    def __post_init__(self) -> None:
        self.steps = HarnessSteps(self.harness.name)

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
        request = model_request(turn, chat)
        try:
            turn.check(request)
        except TopologyError as exc:
            return self.refuse("handoff", 403, exc.message)
        try:
            called = await metered_call(
                turn.caller, turn.model, request, steps=turn.steps, measure=self._prefix.measure,
                recorded={"request_shape": request_shape(chat)}, timeout=MODEL_TIMEOUT,
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
        self.steps.answered(called.response, turn.steps)
        return answered(chat, called.response, self.harness.model_name)

    def _refused(self, refusal: Refusal) -> Reply:
        """A call the metered call refused: the program's call ends, the request is refused."""
        self._end(refusal.reason, refusal.detail)
        return self.refuse(*refusal_of(refusal), record=True)

    def _end(self, reason: EndReason, detail: str) -> None:
        if not self.ended:
            self.ended = True
            self.stop(reason, detail)
