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
