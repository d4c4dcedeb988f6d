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
from swarmflow.record.jsonline import json_line
from swarmflow.record.records import ModelCallFailed, ModelCallFinished, ModelCallStarted

_DIGEST_BYTES = 16


class SentDigest:
    """The digest of what one caller sends, carried from one request to the next.

    The digest is made of what stays fixed from one request to the next (the tools, the
    model, the tool choice, the output form), then the messages. A session's requests only
    grow (each a view of one history list that is appended to), so each is hashed from where
    the last one ended: a long session pays for its new messages, not for its whole history
    at every call. Anything else is hashed whole.
    """

    __slots__ = ("_count", "_fixed", "_messages", "_state")

    def __init__(self) -> None:
        self._messages: Sequence[Message] = ()
        self._count = 0
        """How many messages `_state` holds (those of `_messages`)."""
        self._state: hashlib.blake2b | None = None
        """The digest of the fixed part and `_messages`; made at the first request (a caller
        that never calls with a journal on holds none)."""
        self._fixed: tuple[object, ...] = ()

    def of(self, request: ModelRequest) -> str:
        """The digest of what `request` shows the model (not its `max_tokens`)."""
        messages = request.messages
        new: Sequence[Message] = messages
        state = self._state
        fixed = self._fixed
        # A request that sends the same fixed part (a session sends the same objects every
        # time) and extends the last one's messages extends the running state in place (one
        # slice, one update); anything else starts afresh.
        if (
            state is not None
            and type(messages) is HistoryView
            and request.tools is fixed[0]
            and request.model is fixed[1]
            and request.tool_choice is fixed[2]
            and request.output is fixed[3]
        ):
            added = messages.added_to(self._messages, self._count)
            if added is not None:
                new = added
            else:
                state = None
        else:
            state = None
        if state is None:
            self._fixed = (request.tools, request.model, request.tool_choice, request.output)
            state = hashlib.blake2b(_fixed_digest(request), digest_size=_DIGEST_BYTES)
            self._count = 0
        if new:
            state.update(_messages_bytes(new))
            self._count += len(new)
        self._messages, self._state = messages, state
        # A digest taken leaves the state as it was: the next request goes on from here.
        return state.hexdigest()


_FIXED: dict[tuple[int, int, str | None, str], tuple[object, object, bytes]] = {}
"""The digests of the tools and output forms in use, by identity: every session of an agent
sends its profile's one tuple of tool schemas, which need not be rendered per session."""
_FIXED_MOST = 256


def _fixed_digest(request: ModelRequest) -> bytes:
    key = (id(request.tools), id(request.output), request.model, request.tool_choice)
    found = _FIXED.get(key)
    if found is not None and found[0] is request.tools and found[1] is request.output:
        return found[2]
    tools: Sequence[ToolSpec] = request.tools
    parts = [*map(repr, tools), request.model or "", request.tool_choice, repr(request.output)]
    if len(_FIXED) >= _FIXED_MOST:
        _FIXED.clear()
    # Their digest, not their text, goes into each call's: the schemas of a few tools run to
    # kilobytes, which hashing at every call made the longest part of the key's cost.
    data = hashlib.blake2b(_text(parts), digest_size=_DIGEST_BYTES).digest()
    _FIXED[key] = (request.tools, request.output, data)
    return data


def _messages_bytes(messages: Sequence[Message]) -> bytes:
    """The messages as bytes, each field ended by a NUL, in one piece: the bytes of a list are
    those of its parts joined, so a request hashed in steps has the digest of one hashed
    whole. (Not their JSON: a slotted dataclass costs the serializer a failed `__dict__`
    lookup each, and the longer text costs the hash more.)"""
    parts = []
    for m in messages:
        call_id, name = m.tool_call_id or "", m.name or ""
        parts.append(f"{m.role}\x00{m.content or ''}\x00{call_id}\x00{name}\x00")
        for c in m.tool_calls:
            parts.append(f"{c.id}\x01{c.name}\x01{c.arguments}\x00")
    return "".join(parts).encode("utf-8", "surrogatepass")


def _text(parts: Iterable[str]) -> bytes:
    """Parts as bytes, each ended by a NUL (so ("ab", "c") differs from ("a", "bc"))."""
    return "".join(f"{part}\x00" for part in parts).encode("utf-8", "surrogatepass")


_KEY_HEADS: dict[tuple[str, str, str], bytes] = {}
"""The JSON of a key up to its digest, by branch, agent and purpose (a caller's are fixed)."""
_KEY_HEADS_MOST = 1024


def note_started(journal: Journal, key: ModelKeyTuple) -> bytes:
    """Journal that the call is about to be sent (written at the barrier before it); returns
    its key as JSON, rendered once for both of the call's records (`note_finished`)."""
    branch, agent, purpose, digest = key
    head = _KEY_HEADS.get((branch, agent, purpose))
    if head is None:
        if len(_KEY_HEADS) >= _KEY_HEADS_MOST:
            _KEY_HEADS.clear()
        whole = json_line({"branch": branch, "agent": agent, "purpose": purpose, "digest": ""})
        head = _KEY_HEADS[(branch, agent, purpose)] = whole[: -len(b'"}')]
    rendered = b'%s%s"}' % (head, digest.encode("ascii"))
    journal.write_keyed(ModelCallStarted, rendered, None)
    return rendered


def note_finished(
    journal: Journal, key: bytes, response: ModelResponse, cost: float, at: tuple[str, int]
) -> None:
    """Journal the settled answer, for a resumed run to replay (`key`: as `note_started`
    rendered it; `at`: the caller's session and the call's step, where a transcript shows
    the answer's words)."""
    calls, usage = response.tool_calls, response.usage  # as `usage_fields` writes it
    fields = {
        "text": response.text,
        "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls]
        if calls
        else [],
        "usage": {"input": usage.input, "output": usage.output, "cached_input": usage.cached_input},
        "cost": cost,
        "finish_reason": response.finish_reason,
        "model": response.model,
        "output_mode": response.output_mode,
        "session": at[0],
        "step": at[1],
    }
    journal.write_keyed(ModelCallFinished, key, fields)


def note_failed(journal: Journal, key: bytes, error: BaseException) -> None:
    """Journal that the started call's model raised: the call is over, and nothing settled."""
    journal.write_keyed(ModelCallFailed, key, {"error": type(error).__name__})


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
