"""The session inbox: evidence waits for the step boundary, merged into one capped message."""

from __future__ import annotations

from typing import Any

import anyio

from swarmflow import Agent, agent
from swarmflow.core.messages import ModelRequest
from swarmflow.core.ports import Evidence
from swarmflow.runtime.context import current_session
from swarmflow.sessions.inbox import SessionInbox, render
from swarmflow.testing import FunctionModel, tool_call
from tests.runtime.helpers import of_type, run_one


def _texts(request: ModelRequest) -> list[str]:
    return [m.content or "" for m in request.messages if m.role == "user"]


async def test_evidence_posted_during_a_call_waits_for_the_next_step() -> None:
    in_call, posted = anyio.Event(), anyio.Event()
    inboxes: list[Any] = []

    async def policy(request: ModelRequest) -> Any:
        if len(model.requests) == 1:
            session = current_session.get()
            assert session is not None
            inboxes.append(session.inbox)
            in_call.set()
            await posted.wait()  # a source posts while this call is in flight
            return tool_call("list_files")
        return "done"

    async def source() -> None:
        await in_call.wait()
        inboxes[0].post(Evidence("diagnostics", "a.py:1:1: error F821 Undefined name `x`"))
        inboxes[0].post(Evidence("workspace", "b.py changed"))
        posted.set()

    model = FunctionModel(policy)
    worker = Agent("w", tools=["list_files"], workspace="local")
    async with anyio.create_task_group() as tg:
        tg.start_soon(source)
        result = await run_one([worker], lambda: agent("w", "go"), model)
    first, second = model.requests
    assert not any("F821" in t for t in _texts(first))  # the in-flight request is unchanged
    evidence = [t for t in _texts(second) if "F821" in t]
    assert evidence == [
        "Evidence since your last step (2 items):\n\n"
        "[diagnostics] a.py:1:1: error F821 Undefined name `x`\n\n"
        "[workspace] b.py changed"
    ]
    delivered = of_type(result, "evidence_delivered")
    assert [(e.source, e.step, e.shown) for e in delivered] == [
        ("diagnostics", 2, True),
        ("workspace", 2, True),
    ]
    assert len(model.requests) == 2  # listening cost no model call


def test_the_message_is_capped_and_names_what_it_left_out() -> None:
    items = [Evidence("workspace", "x" * 300) for _ in range(10)] + [Evidence("commands", "y")]
    text, shown = render(items, cap=1000)
    assert len(text) < 1200
    assert shown == 3
    assert f"({len(items) - 3} more items not shown, over the size cap: 1 from commands, " in text


def test_a_newer_item_with_the_same_key_replaces_the_pending_one() -> None:
    events: list[dict[str, Any]] = []
    inbox = SessionInbox("w", "w#1", lambda cls, **f: events.append(f))
    inbox.post(Evidence("workspace", "a.py is now version 1", key="invalidated:a.py"))
    inbox.post(Evidence("workspace", "a.py is now version 2", key="invalidated:a.py"))
    text = inbox.drain(3)
    assert "version 2" in text and "version 1" not in text
    assert [e["step"] for e in events] == [3]
    assert inbox.drain(4) == ""  # delivered once
