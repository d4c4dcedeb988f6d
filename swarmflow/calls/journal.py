"""The journal of model calls: each call's key, its start and its settled answer.

A model call's key is its branch, its agent, its purpose and a digest of what it sent (the
messages, the tools, the output form, the model's name; not `max_tokens`, which depends on
the budget left). A resumed run whose call sends what an earlier process's settled call sent
is answered from that record at 0 tokens; it pays from the first call that sends something
else (a tool that answered differently, a call the earlier process never finished).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from swarmflow.core.history import HistoryView
from swarmflow.core.messages import Message, ModelRequest, ModelResponse, ToolCall, ToolSpec
from swarmflow.record.journal import Journal, ModelKeyTuple
from swarmflow.record.records import ModelCallFinished, ModelCallStarted, usage_fields

_DIGEST_BYTES = 16


class SentDigest:
    """The digest of what one caller sends, carried from one request to the next.

    A session's requests only grow (each a view of one history list that is appended to), so
    each is hashed from where the last one ended: a long session pays for its new messages,
    not for its whole history at every call. Anything else is hashed whole.
    """

    __slots__ = ("_fixed", "_fixed_bytes", "_messages", "_state")

    def __init__(self) -> None:
        self._messages: Sequence[Message] = ()
        self._state: hashlib.blake2b | None = None
        """The digest of `_messages`; made at the first request (a caller that never calls
        with a journal on holds none)."""
        self._fixed: tuple[object, ...] = ()
        self._fixed_bytes = b""

    def of(self, request: ModelRequest) -> str:
        """The digest of what `request` shows the model (not its `max_tokens`)."""
        messages = request.messages
        start = _shared(messages, self._messages)
        # A shared start extends the running state in place; anything else starts afresh.
        state = self._state
        if not start or state is None:
            state, start = hashlib.blake2b(digest_size=_DIGEST_BYTES), 0
        for message in messages[start:]:
            state.update(_message_bytes(message))
        self._messages, self._state = messages, state
        final = state.copy()
        final.update(self._fixed_of(request))
        return final.hexdigest()

    def _fixed_of(self, request: ModelRequest) -> bytes:
        """The tools, the model, the tool choice and the output form, as bytes (kept while
        they stay the same objects: a session sends the same ones every time)."""
        fixed = self._fixed
        if not (
            fixed
            and request.tools is fixed[0]
            and request.model is fixed[1]
            and request.tool_choice is fixed[2]
            and request.output is fixed[3]
        ):
            self._fixed = (request.tools, request.model, request.tool_choice, request.output)
            self._fixed_bytes = _fixed_bytes(request)
        return self._fixed_bytes


_FIXED: dict[tuple[int, int, str | None, str], tuple[object, object, bytes]] = {}
"""The bytes of the tools and output forms in use, by identity: every session of an agent
sends its profile's one tuple of tool schemas, which need not be rendered per session."""
_FIXED_MOST = 256


def _fixed_bytes(request: ModelRequest) -> bytes:
    key = (id(request.tools), id(request.output), request.model, request.tool_choice)
    found = _FIXED.get(key)
    if found is not None and found[0] is request.tools and found[1] is request.output:
        return found[2]
    tools: Sequence[ToolSpec] = request.tools
    parts = [*map(repr, tools), request.model or "", request.tool_choice, repr(request.output)]
    if len(_FIXED) >= _FIXED_MOST:
        _FIXED.clear()
    data = _text(parts)
    _FIXED[key] = (request.tools, request.output, data)
    return data


def _shared(messages: Sequence[Message], before: Sequence[Message]) -> int:
    """How many messages of `before` lead `messages` unchanged (0 when not known cheaply)."""
    if not before or not isinstance(messages, HistoryView):
        return 0
    shared = messages.shared_prefix(before)
    return shared if shared == len(before) else 0


def _message_bytes(m: Message) -> bytes:
    text = f"{m.role}\x00{m.content or ''}\x00{m.tool_call_id or ''}\x00{m.name or ''}\x00"
    for c in m.tool_calls:
        text += f"{c.id}\x01{c.name}\x01{c.arguments}\x00"
    return text.encode("utf-8", "surrogatepass")


def _text(parts: Iterable[str]) -> bytes:
    """Parts as bytes, each ended by a NUL (so ("ab", "c") differs from ("a", "bc"))."""
    return "".join(f"{part}\x00" for part in parts).encode("utf-8", "surrogatepass")


def model_key(
    branch: str, agent: str, purpose: str, request: ModelRequest, sent: SentDigest | None = None
) -> ModelKeyTuple:
    """The key of a model call sending `request` (`sent`: the caller's running digest)."""
    return (branch, agent, purpose, (sent or SentDigest()).of(request))


def _key_fields(key: ModelKeyTuple) -> dict[str, str]:
    branch, agent, purpose, digest = key
    return {"branch": branch, "agent": agent, "purpose": purpose, "digest": digest}


def note_started(journal: Journal, key: ModelKeyTuple) -> None:
    """Journal that the call is about to be sent (written at the barrier before it)."""
    journal.write(ModelCallStarted, {"key": _key_fields(key)})


def note_finished(
    journal: Journal, key: ModelKeyTuple, response: ModelResponse, cost: float
) -> None:
    """Journal the settled answer, for a resumed run to replay."""
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls]
    fields = {
        "key": _key_fields(key),
        "text": response.text,
        "tool_calls": calls,
        "usage": usage_fields(response.usage),
        "cost": cost,
        "finish_reason": response.finish_reason,
        "model": response.model,
        "output_mode": response.output_mode,
    }
    journal.write(ModelCallFinished, fields)


def recorded_response(record: ModelCallFinished) -> ModelResponse:
    """The recorded answer, as the model gave it."""
    return ModelResponse(
        text=record.text,
        tool_calls=tuple(ToolCall(c.id, c.name, c.arguments) for c in record.tool_calls),
        usage=record.usage,
        finish_reason=record.finish_reason,
        model=record.model,
        output_mode=record.output_mode,
    )
