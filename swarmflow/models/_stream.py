"""Assembly of streamed chat-completions chunks into one response."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from swarmflow.core.messages import ModelRequest, ModelResponse, ToolCall, Usage
from swarmflow.models._wire import arguments_text, assemble, usage_from_wire


@dataclass(slots=True)
class _PartialCall:
    """A tool call whose pieces are still arriving."""

    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass(slots=True)
class StreamAssembler:
    """Collects text, tool-call deltas, finish reason and usage from stream chunks."""

    model: str
    text: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    reason: object = None
    usage: Usage | None = None
    chunks: int = 0

    def feed(self, chunk: Mapping[str, object]) -> None:
        """Take one decoded chunk."""
        self.chunks += 1
        if chunk.get("model"):
            self.model = str(chunk["model"])
        usage = usage_from_wire(chunk.get("usage"))
        if usage is not None:
            self.usage = usage
        choices = chunk.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
            self._feed_choice(choices[0])

    def _feed_choice(self, choice: Mapping[str, object]) -> None:
        """Take the delta and finish reason of the first choice."""
        if choice.get("finish_reason"):
            self.reason = choice["finish_reason"]
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            return
        if isinstance(delta.get("content"), str):
            self.text.append(delta["content"])
        for piece in delta.get("tool_calls") or ():
            if isinstance(piece, Mapping):
                self._feed_call(piece)

    def _feed_call(self, piece: Mapping[str, object]) -> None:
        """Merge one tool-call delta into the call at its index."""
        slot = self._slot(piece)
        if piece.get("id"):
            slot.id = str(piece["id"])
        function = piece.get("function")
        if not isinstance(function, Mapping):
            return
        # The name arrives whole in the first delta; later deltas carry argument pieces.
        if function.get("name") and not slot.name:
            slot.name = str(function["name"])
        if function.get("arguments") is not None:
            slot.arguments += arguments_text(function["arguments"])

    def _slot(self, piece: Mapping[str, object]) -> _PartialCall:
        """The partial call a delta belongs to; servers that omit the index get one by id."""
        index = piece.get("index")
        if not isinstance(index, int):
            known = [i for i, c in self.calls.items() if piece.get("id") and c.id == piece["id"]]
            new = piece.get("id") or not self.calls
            index = known[0] if known else (len(self.calls) if new else max(self.calls))
        return self.calls.setdefault(index, _PartialCall())

    def result(self, request: ModelRequest) -> ModelResponse:
        """The assembled response."""
        calls = tuple(
            ToolCall(c.id or f"call_{n}", c.name, c.arguments or "{}")
            for n, c in enumerate(self.calls[i] for i in sorted(self.calls))
        )
        return assemble(
            request,
            text="".join(self.text) or None,
            calls=calls,
            reason=self.reason,
            usage=self.usage,
            model=self.model,
        )
