"""Reservations in the shared workspace: refused while held, ended by release, session end
and timeout (an injected clock), never a deadlock; and the invalidation stress."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from swarmflow.core.ports import ToolContext
from swarmflow.sessions.inbox import SessionInbox
from swarmflow.tools import default_registry
from swarmflow.workspaces import SharedWorkspace


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Recorder:
    """An inbox's emit: the events it was given, by type name."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, cls: Any, **fields: Any) -> None:
        self.events.append((cls.model_fields["type"].default, fields))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def shared(tmp_path: Path, clock: Clock) -> SharedWorkspace:
    (tmp_path / "x.py").write_text("x = 1\n")
    (tmp_path / "y.py").write_text("y = 1\n")
    return SharedWorkspace(tmp_path, clock=clock)


def _ctx(shared: SharedWorkspace, name: str, emit: Recorder | None = None) -> ToolContext:
    recorder = emit or Recorder()
    ctx = ToolContext(agent=name, session=f"{name}#1", workspace=shared, emit=recorder)
    shared.subscribe(SessionInbox(name, ctx.session, recorder))
    return ctx


async def _write(ctx: ToolContext, path: str, content: str) -> Any:
    tools = default_registry()
    await tools.execute("read_file", {"path": path}, ctx)
    return await tools.execute("write_file", {"path": path, "content": content}, ctx)


async def test_a_reserved_file_refuses_another_agents_write_until_the_timeout(
    shared: SharedWorkspace, clock: Clock
) -> None:
    tools = default_registry()
    events = Recorder()
    a, b = _ctx(shared, "A"), _ctx(shared, "B", events)
    held = await tools.execute("reserve", {"path": "x.py", "seconds": 30}, a)
    assert held.ok and "reserved x.py for 30s" in held.text
    refused = await _write(b, "x.py", "x = 2\n")
    assert not refused.ok
    assert "A has reserved it for 30s more" in refused.text
    assert ("reservation_refused", {"path": "x.py", "holder": "A", "seconds_left": 30.0}) in (
        events.events
    )
    assert (await _write(a, "x.py", "x = 3\n")).ok  # the holder writes
    again = await tools.execute("reserve", {"path": "x.py"}, b)
    assert not again.ok and "A has reserved it" in again.text
    clock.now += 30.5
    assert (await _write(b, "x.py", "x = 4\n")).ok
    assert (shared.root / "x.py").read_text() == "x = 4\n"


async def test_a_reservation_ends_with_release_and_with_the_holders_session(
    shared: SharedWorkspace,
) -> None:
    tools = default_registry()
    a, b = _ctx(shared, "A"), _ctx(shared, "B")
    await tools.execute("reserve", {"path": "x.py"}, a)
    await tools.execute("reserve", {"path": "y.py"}, a)
    assert (await tools.execute("release", {"path": "x.py"}, b)).text.endswith("nothing to release")
    assert (await tools.execute("release", {"path": "x.py"}, a)).text == "released x.py"
    assert (await _write(b, "x.py", "x = 2\n")).ok
    assert not (await _write(b, "y.py", "y = 2\n")).ok
    shared.unsubscribe(a.session)  # A's session ended
    assert (await _write(b, "y.py", "y = 2\n")).ok


async def test_reservations_in_opposite_order_never_deadlock(shared: SharedWorkspace) -> None:
    tools = default_registry()
    a, b = _ctx(shared, "A"), _ctx(shared, "B")
    results: dict[str, list[bool]] = {}

    async def take(ctx: ToolContext, order: list[str]) -> None:
        got = []
        for path in order:
            got.append((await tools.execute("reserve", {"path": path}, ctx)).ok)
            await anyio.lowlevel.checkpoint()
        results[ctx.agent] = got

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(take, a, ["x.py", "y.py"])
            tg.start_soon(take, b, ["y.py", "x.py"])
    assert results == {"A": [True, False], "B": [True, False]}


async def test_reservations_refuse_hostile_arguments(shared: SharedWorkspace) -> None:
    tools = default_registry()
    a = _ctx(shared, "A")
    escape = await tools.execute("reserve", {"path": "../outside.py"}, a)
    assert not escape.ok and "outside" in escape.text
    assert not (await tools.execute("reserve", {"path": "x.py", "seconds": 0}, a)).ok
    assert not (await tools.execute("reserve", {"path": "x.py", "seconds": 1e9}, a)).ok


NOTICE = re.compile(r"\[workspace\] (\S+) changed: it is now version (\d+)")


async def _append_line(ctx: ToolContext, path: str, drain: Any) -> None:
    """Read `path`, append a line, write; on a refusal re-read what it names and retry."""
    tools = default_registry()
    for _ in range(200):
        drain()  # the step boundary
        read = await tools.execute("read_file", {"path": path}, ctx)
        rows = read.text.splitlines() if read.ok else []
        old = "".join(row.split("\t", 1)[1] + "\n" for row in rows if "\t" in row)
        await anyio.lowlevel.checkpoint()
        line = f"{ctx.agent} {len(old.splitlines())}\n"
        written = await tools.execute("write_file", {"path": path, "content": old + line}, ctx)
        if written.ok:
            return
        for stale in re.findall(r"^- (\S+): you read version", written.text, re.M):
            await tools.execute("read_file", {"path": stale}, ctx)  # as told to
    raise AssertionError(f"{ctx.agent} made no progress on {path}")


async def test_six_agents_two_hundred_writes_no_update_lost_each_notice_once(
    tmp_path: Path,
) -> None:
    """Each agent appends its lines to shared files through read -> write, retrying stale
    writes; its inbox is drained at every step. No line is lost, no notice delivered twice,
    and a reader left stale at the end holds a notice naming the file's last version."""
    files = [f"f{i}.txt" for i in range(6)]
    shared = SharedWorkspace(tmp_path)
    rng = random.Random(7)
    # Agent i writes files i and i+1: each file is shared by two writers and two readers.
    plan = [(f"a{i % 6}", files[(i % 6 + rng.randrange(2)) % 6]) for i in range(200)]
    inboxes = {f"a{i}": SessionInbox(f"a{i}", f"a{i}", Recorder()) for i in range(6)}
    delivered: dict[str, list[tuple[str, int]]] = {name: [] for name in inboxes}

    def drain(name: str) -> None:
        text = inboxes[name].drain(0)
        delivered[name] += [(p, int(v)) for p, v in NOTICE.findall(text)]

    async def agent(name: str) -> None:
        ctx = ToolContext(agent=name, session=name, workspace=shared, emit=Recorder())
        for path in [path for mine, path in plan if mine == name]:
            await _append_line(ctx, path, lambda: drain(name))

    for inbox in inboxes.values():
        shared.subscribe(inbox)
    async with anyio.create_task_group() as tg:
        for name in inboxes:
            tg.start_soon(agent, name)
    written = [(tmp_path / f).read_text() for f in files if (tmp_path / f).exists()]
    assert sum(len(text.splitlines()) for text in written) == 200
    assert sum(len(got) for got in delivered.values()) > 100  # the notices did flow
    for name in inboxes:
        drain(name)
        got = delivered[name]
        assert len(got) == len(set(got)), name  # each notice once
        stale = [p for p, seen in shared.snapshot(name).items() if seen < (shared.version(p) or 0)]
        for path in stale:
            assert max(v for p, v in got if p == path) == shared.version(path)
