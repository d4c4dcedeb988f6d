"""Prompt-prefix reuse: how much of each request repeats the previous request of its session.

Provider prompt caches bill a repeated prefix at a fraction of the price, so a session keeps
its prompt stable: tools and the role card first, the history appended after them, nothing
that changes per call in front. This meter measures, per model call and from what was sent,
the prompt's estimated tokens (the one estimator's units at its prior rate) and how many of
them repeat the previous request's prefix; the session records both on its `model_called`
event. A compaction rewrites the history, the one thing that may shorten the shared prefix
(it is recorded as its own event).

Across sessions: a session's first request is compared with the first request of its agent's
first session in the run (`FirstRequest`); sessions lay their requests out so that what they
share comes first (card, tool schemas, task; `sessions.layout`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from swarmflow.core.history import HistoryView
from swarmflow.core.messages import Message, ModelRequest, ToolSpec
from swarmflow.core.tokens import message_units, spec_units, units_to_tokens


class FirstRequest:
    """The first request of an agent's first session in a run: the first request of each
    later session of that agent measures how long a prefix it shares with it (card, tool
    schemas, task), the part a provider's cache can serve across sessions."""

    __slots__ = ("_cumulative", "_messages", "_tools")

    def __init__(self) -> None:
        self._messages: tuple[Message, ...] | None = None
        self._tools: Sequence[ToolSpec] = ()
        self._cumulative: list[int] = []
        """Units of the first request's messages up to and including each one."""

    def shared_units(self, request: ModelRequest, tools_units: int) -> int:
        """The units `request` shares with the first one (0 for the first one itself)."""
        if self._messages is None:
            self._messages, self._tools = tuple(request.messages), request.tools
            total = 0
            for message in self._messages:
                total += message_units(message)
                self._cumulative.append(total)
            return 0
        # The agent's sessions send its profile's one tuple of schemas: compared by identity
        # first, since comparing schemas by value walks every one of them.
        if request.tools is not self._tools and request.tools != self._tools:
            return 0
        shared = _common_length(self._messages, request.messages)
        return tools_units + (self._cumulative[shared - 1] if shared else 0)


@dataclass(frozen=True, slots=True)
class Bust:
    """A request that did not repeat the previous one as its prefix, with no compaction
    between them: the first part that differs, and the tokens the two still share."""

    part: Literal["tools", "card", "message"]
    where: str
    """The part in words: "the tool schemas", "the role card", "message 4 (tool)"."""
    kept_tokens: int
    previous_tokens: int


def first_difference(
    before: tuple[Sequence[ToolSpec], Sequence[Message]],
    now: tuple[Sequence[ToolSpec], Sequence[Message]],
    shared: int | None = None,
) -> tuple[Literal["tools", "card", "message"], str] | None:
    """The first part of `now` (tools, messages) that differs from `before`, in the order a
    server lays a prompt out: tool schemas, the role card, the messages; None when `now`
    extends `before`. `shared`: the leading messages already known to be the same."""
    (tools_before, old), (tools, new) = before, now
    if tools is not tools_before and list(tools) != list(tools_before):
        return "tools", "the tool schemas"
    at = _common_length(old, new) if shared is None else shared
    if at >= len(old):
        return None
    if at == 0 and old[0].role == "system" and (not new or new[0].role == "system"):
        return "card", "the role card"
    role = new[at].role if at < len(new) else "none: the request is shorter"
    return "message", f"message {at} ({role})"


class PrefixMeter:
    """Remembers one session's previous request and compares the next one against it."""

    __slots__ = (
        "_cumulative",
        "_first",
        "_messages",
        "_prompt_tokens",
        "_rewritten",
        "_tools",
        "_tools_units",
        "bust",
    )

    def __init__(
        self,
        tools: Sequence[ToolSpec] = (),
        tools_units: int = 0,
        first: FirstRequest | None = None,
    ) -> None:
        """`tools` and `tools_units`: the schemas the session sends and their size, measured
        once per agent and run (`AgentProfile`), so that its first request need not. `first`:
        its agent's first request in the run, for the prefix shared across sessions."""
        self._first = first
        self._messages: Sequence[Message] | None = None
        """The previous request's messages; None before the first request."""
        self._cumulative: list[int] = []
        """Units of the previous request's messages up to and including each one."""
        self._tools = tools
        self._tools_units = tools_units
        """The size of `_tools`: as given, or measured when a request sends other tools."""
        self._prompt_tokens = 0
        self._rewritten = False
        self.bust: Bust | None = None
        """The last measured request's cache bust, if it was one (`first_difference`)."""

    def rewritten(self) -> None:
        """The session rewrote its history (a compaction): the next request may share less
        with the previous one without being a cache bust."""
        self._rewritten = True

    def measure(self, request: ModelRequest) -> dict[str, int]:
        """`prompt_tokens` and `prefix_tokens` of `request`, then remember it as the previous."""
        tools, messages = request.tools, request.messages
        kept_tools = tools is self._tools or tools == self._tools
        before = (self._tools, self._messages)
        if not kept_tools:
            self._tools, self._tools_units = tools, sum(spec_units(spec) for spec in tools)
        # Only a request after one with the same tools can repeat a prefix of it.
        previous = self._messages if kept_tools else None
        shared = _common_length(previous, messages) if previous is not None else 0
        cumulative = self._cumulative
        extends = previous is not None and shared == len(cumulative)  # all of the previous
        del cumulative[shared:]
        total = cumulative[-1] if cumulative else 0
        for message in _after(messages, shared):
            total += message_units(message)
            cumulative.append(total)
        self._messages = messages
        reused = across = 0
        if previous is not None:
            reused = self._tools_units + (cumulative[shared - 1] if shared else 0)
        elif self._first is not None:
            across = self._first.shared_units(request, self._tools_units)
        # Units become tokens at one rate for both, so the share is the share of units.
        measured = {
            "prompt_tokens": units_to_tokens(self._tools_units + total),
            "prefix_tokens": units_to_tokens(reused),
            "shared_prefix_tokens": units_to_tokens(across),
        }
        kept = measured["prefix_tokens"]
        self.bust = None if extends else self._bust(before, (tools, messages), shared, kept)
        self._prompt_tokens, self._rewritten = measured["prompt_tokens"], False
        return measured

    def _bust(
        self,
        before: tuple[Sequence[ToolSpec], Sequence[Message] | None],
        now: tuple[Sequence[ToolSpec], Sequence[Message]],
        shared: int,
        kept: int,
    ) -> Bust | None:
        """The request's cache bust: it does not extend the previous one, and no compaction
        came between them."""
        tools, old = before
        if old is None or self._rewritten:
            return None
        known = shared if now[0] is tools or now[0] == tools else None
        found = first_difference((tools, old), now, known)
        if found is None:
            return None
        return Bust(found[0], found[1], kept, self._prompt_tokens)


def _common_length(before: Sequence[Message], now: Sequence[Message]) -> int:
    """How many leading messages two requests share (the same objects, or equal ones).

    Two snapshots of one session's history are compared without reading them: reading them
    made every call cost the length of the conversation.
    """
    known = now.shared_prefix(before) if isinstance(now, HistoryView) else None
    if known is not None:
        return known
    shared = 0
    for a, b in zip(before, now, strict=False):  # the shorter one bounds the shared prefix
        if a is not b and a != b:
            break
        shared += 1
    return shared


def _after(messages: Sequence[Message], start: int) -> Sequence[Message]:
    """The messages from `start` on, without copying the ones before."""
    return messages[start:] if start else messages
