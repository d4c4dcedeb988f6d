"""A history snapshot behaves like the tuple it replaces, and never sees later messages."""

import pytest

from swarmflow.core.history import HistoryView
from swarmflow.core.messages import Message

SYSTEM = Message("system", "card")


def test_view_is_a_frozen_snapshot() -> None:
    history = [Message("user", "a"), Message("assistant", "b")]
    view = HistoryView(history, len(history), SYSTEM)
    history.append(Message("user", "c"))
    assert list(view) == [SYSTEM, *history[:2]]
    assert len(view) == 3 and view[0] is SYSTEM and view[-1] == history[1]
    assert list(reversed(view)) == [history[1], history[0], SYSTEM]
    assert view[1:] == (history[0], history[1])
    assert view == (SYSTEM, history[0], history[1])
    with pytest.raises(IndexError):
        view[3]


def test_view_without_a_system_message() -> None:
    history = [Message("user", "only")]
    view = HistoryView(history, 1)
    assert list(view) == history and view[-1] is history[0] and len(view) == 1


@pytest.mark.parametrize("head", [None, SYSTEM])
def test_every_slice_reads_what_the_tuple_would(head: Message | None) -> None:
    """Slices are read from the history list directly; each must equal the tuple's slice,
    and none may reach the messages appended after the snapshot."""
    history = [Message("user", str(i)) for i in range(6)]
    for length in range(len(history) + 1):
        view = HistoryView(history, length, head)
        expected = tuple(view)
        bounds = [None, *range(-9, 10)]
        for start in bounds:
            for stop in bounds:
                for step in (None, 1, 2, -1, -3):
                    assert view[start:stop:step] == expected[start:stop:step]


@pytest.mark.parametrize("head", [None, SYSTEM])
def test_a_later_view_gives_the_messages_it_adds_to_an_earlier_one(head: Message | None) -> None:
    """What a view adds to an earlier view of the same conversation is its tail, exactly as
    slicing it there would read; a view it does not extend gives None."""
    history = [Message("user", str(i)) for i in range(5)]
    earlier, later = HistoryView(history, 2, head), HistoryView(history, 5, head)
    assert later.added_to(earlier, len(earlier)) == later[len(earlier) :]
    assert later.added_to(later, len(later)) == ()
    assert earlier.added_to(later, len(later)) is None  # shorter: it does not extend it
    assert later.added_to(earlier, len(earlier) + 1) is None  # not the count given
    other_head = Message("system", "another card")
    assert later.added_to(HistoryView(history, 2, other_head), len(earlier)) is None
    assert later.added_to(HistoryView(list(history), 2, head), len(earlier)) is None
    assert later.added_to(tuple(earlier), len(earlier)) is None
