"""A model call's journal key digests what its request shows the model, however the caller's
earlier requests went: a request digested after others has the digest it has on its own."""

from __future__ import annotations

from swarmflow.calls.journal import SentDigest
from swarmflow.core.history import HistoryView
from swarmflow.core.messages import Message, ModelRequest, ToolSpec

TOOLS = (ToolSpec("read", "Read a file.", {"type": "object"}),)
OTHER_TOOLS = (ToolSpec("write", "Write a file.", {"type": "object"}),)
SYSTEM = Message("system", "You edit files.")


def fresh(request: ModelRequest) -> str:
    return SentDigest().of(request)


def test_a_growing_session_digests_as_its_requests_do_whole() -> None:
    history = [Message("user", "first")]
    running = SentDigest()
    digests = []
    for turn in range(4):
        request = ModelRequest(HistoryView(history, len(history), SYSTEM), tools=TOOLS, model="m")
        digest = running.of(request)
        assert digest == fresh(request)
        digests.append(digest)
        history += [Message("assistant", f"answer {turn}"), Message("user", f"next {turn}")]
    assert len(set(digests)) == len(digests)


def test_a_rewritten_history_is_digested_whole() -> None:
    history = [Message("user", "first"), Message("assistant", "a"), Message("user", "b")]
    running = SentDigest()
    running.of(ModelRequest(HistoryView(history, 3, SYSTEM), tools=TOOLS))
    compacted = [Message("user", "summary of the first three")]
    request = ModelRequest(HistoryView(compacted, 1, SYSTEM), tools=TOOLS)
    assert running.of(request) == fresh(request)


def test_other_tools_model_or_output_change_the_digest() -> None:
    history = [Message("user", "first")]
    running = SentDigest()
    first = running.of(ModelRequest(HistoryView(history, 1), tools=TOOLS, model="m"))
    history.append(Message("assistant", "a"))
    for changed in (
        ModelRequest(HistoryView(history, 2), tools=OTHER_TOOLS, model="m"),
        ModelRequest(HistoryView(history, 2), tools=TOOLS, model="other"),
        ModelRequest(HistoryView(history, 2), tools=TOOLS, model="m", tool_choice="none"),
    ):
        digest = running.of(changed)
        assert digest == fresh(changed)
        assert digest != first


def test_the_same_messages_in_a_plain_list_digest_alike() -> None:
    history = [Message("user", "first"), Message("assistant", "a")]
    view = ModelRequest(HistoryView(history, 2, SYSTEM), tools=TOOLS)
    plain = ModelRequest([SYSTEM, *history], tools=TOOLS)
    assert fresh(view) == fresh(plain)
