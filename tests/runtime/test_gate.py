"""The turn gate: one holder, waiters served in order, cancellation passes the gate on."""

from __future__ import annotations

import anyio

from swarmflow.runtime.gate import TurnGate


async def test_free_gate_is_taken_at_once_and_released() -> None:
    gate = TurnGate()
    assert gate.take()
    assert gate.locked()
    assert not gate.take()
    gate.release()
    assert not gate.locked()


async def test_waiters_are_served_first_come_first_served() -> None:
    gate = TurnGate()
    order: list[int] = []
    queued = [anyio.Event() for _ in range(3)]

    async def turn(i: int) -> None:
        queued[i].set()
        async with gate:
            order.append(i)

    gate.take()
    async with anyio.create_task_group() as tg:
        for i in range(3):
            tg.start_soon(turn, i)
            await queued[i].wait()  # each waiter is queued before the next one starts
        gate.release()
    assert order == [0, 1, 2]
    assert not gate.locked()


async def test_a_cancelled_waiter_leaves_the_queue() -> None:
    gate = TurnGate()
    gate.take()
    entered = anyio.Event()
    served: list[str] = []

    async def doomed() -> None:
        with anyio.CancelScope() as scope:
            holder["scope"] = scope
            entered.set()
            await gate.acquire()
            served.append("doomed")

    holder: dict[str, anyio.CancelScope] = {}
    async with anyio.create_task_group() as tg:
        tg.start_soon(doomed)
        await entered.wait()
        holder["scope"].cancel()
    gate.release()
    assert served == []
    assert not gate.locked()  # nobody was left waiting, so the gate is free again


async def test_a_waiter_cancelled_after_being_handed_the_gate_passes_it_on() -> None:
    gate = TurnGate()
    gate.take()
    entered = anyio.Event()
    served: list[str] = []
    scopes: list[anyio.CancelScope] = []

    async def waiter(name: str) -> None:
        with anyio.CancelScope() as scope:
            scopes.append(scope)
            entered.set()
            await gate.acquire()
            served.append(name)
            gate.release()

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter, "first")
        await entered.wait()
        gate.release()  # hands the gate to "first" ...
        scopes[0].cancel()  # ... which is cancelled before it runs again
    # Whether the cancellation lands before the turn starts is the event loop's choice;
    # either way the gate must not stay held by a task that is gone.
    assert served in ([], ["first"])
    assert not gate.locked()
