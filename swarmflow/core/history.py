"""A snapshot of a growing conversation that costs O(1) to take.

A session's history only ever grows by appending (compaction swaps in a new list rather than
editing the old one), so a snapshot is the list and its length at that moment. Copying the
history for every model call would make a long session quadratic.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

from swarmflow.core.messages import Message


class HistoryView(Sequence[Message]):
    """The first `length` messages of `history`, after an optional leading system message."""

    __slots__ = ("_head", "_history", "_length")

    def __init__(self, history: list[Message], length: int, head: Message | None = None) -> None:
        self._history = history
        self._length = length
        self._head = head

    def __len__(self) -> int:
        return self._length + (self._head is not None)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | Sequence[Message]:
        if isinstance(index, slice):  # reads only the messages in the slice
            start, stop, step = index.indices(len(self))
            if step != 1 or (self._head is not None and start == 0):
                return tuple(self[i] for i in range(start, stop, step))
            shift = self._head is not None  # past the head, index i is history[i - 1]
            return tuple(self._history[start - shift : max(start, stop) - shift])
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("history index out of range")
        if self._head is not None:
            if index == 0:
                return self._head
            index -= 1
        return self._history[index]

    def shared_prefix(self, other: Sequence[Message]) -> int | None:
        """How many leading messages `other` shares with this view, when that is known without
        reading them: two views of one history list (which only grows) and one head share the
        shorter of the two. None when it is not known."""
        if (
            isinstance(other, HistoryView)
            and other._history is self._history
            and other._head is self._head
        ):
            return min(self._length, other._length) + (self._head is not None)
        return None

    def added_to(self, other: Sequence[Message], count: int) -> Sequence[Message] | None:
        """The messages this view holds after `other`, a view of `count` messages that it
        extends (one history list, one head), in one call; None when it does not extend it."""
        if (
            type(other) is HistoryView
            and other._history is self._history
            and other._head is self._head
            and other._length + (self._head is not None) == count
            and other._length <= self._length
        ):
            return tuple(self._history[other._length : self._length])
        return None

    def __iter__(self) -> Iterator[Message]:
        if self._head is not None:
            yield self._head
        history = self._history
        for i in range(self._length):
            yield history[i]

    def __reversed__(self) -> Iterator[Message]:
        history = self._history
        for i in range(self._length - 1, -1, -1):
            yield history[i]
        if self._head is not None:
            yield self._head

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"HistoryView({list(self)!r})"
